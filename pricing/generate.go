package pricing

//go:generate go run ./internal/gen -in ../../shared/data/aws-on-demand-prices.json -out zz_generated_prices.go
