module toolnexus/bindings/go

go 1.19
