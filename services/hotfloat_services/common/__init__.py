"""What every hotfloat service shares: transport, authentication, error mapping, streaming and conversions."""
