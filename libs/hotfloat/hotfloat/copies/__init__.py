"""Copy detection: normalized-code fingerprints per op and file, judged against the reference library and earlier submissions."""
