"""The validator: moves each ledger submission through compile, admission and qualification over gRPC."""
