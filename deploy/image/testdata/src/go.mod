// A module of one small program for deploy/image's TestBuildSmall: the builder's whole path
// (both architectures, the base, layout, archive, push) in the time a standard-library build
// takes, where the real programs take tens of minutes.
module example.com/imagetest

go 1.26
