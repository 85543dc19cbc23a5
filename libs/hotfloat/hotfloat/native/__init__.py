"""Native artifacts: the cubin ELF gate, declared parameter layouts, the check of a cubin against its declaration,
and the Driver-API worker that admission runs."""
