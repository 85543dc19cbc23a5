"""The chain layer: miner commitments, validator intake with bounded fetch, and weight publication on Bittensor."""
