module github.com/openprogram/openprogram/internal

go 1.26
