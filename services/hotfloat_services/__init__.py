"""gRPC services of hotfloat: adapters between the wire contract and the hotfloat library."""
