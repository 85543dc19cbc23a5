"""SGLang adapter of hotfloat's seams: an `sglang.srt.plugins` entry point, active only when HOTFLOAT_SEAMS=1."""
