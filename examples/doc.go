// Package examples holds runnable programs built on nodeplan: the example controller
// (examples/controller) and the what-if tool (examples/plan). It is a module of its own so that
// client-go and other heavy dependencies stay out of the core module.
package examples
