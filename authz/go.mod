module github.com/openprogram/openprogram/authz

go 1.26.0

require github.com/openprogram/openprogram/internal v0.0.0

require golang.org/x/sys v0.50.0 // indirect

replace github.com/openprogram/openprogram/internal => ../internal
