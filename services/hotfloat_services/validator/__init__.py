"""The validator's gRPC adapter: `hotfloat.validator.Stages` over the compiler, admission and qualification services."""
