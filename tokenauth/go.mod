module github.com/openprogram/openprogram/tokenauth

go 1.26.0

require (
	github.com/openprogram/openprogram/internal v0.0.0
	golang.org/x/sys v0.50.0
)

replace github.com/openprogram/openprogram/internal => ../internal
