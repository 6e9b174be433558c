module github.com/openprogram/openprogram/authz

go 1.26

require github.com/openprogram/openprogram/internal v0.0.0

replace github.com/openprogram/openprogram/internal => ../internal
