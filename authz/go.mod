module github.com/openprogram/openprogram/authz

go 1.26
