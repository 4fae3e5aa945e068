module github.com/nodeplan/nodeplan/examples

go 1.26.0

require github.com/nodeplan/nodeplan v0.0.0

replace github.com/nodeplan/nodeplan => ../
