"""Native artifacts: the cubin ELF gate, declared parameter layouts, and Driver-API admission."""
