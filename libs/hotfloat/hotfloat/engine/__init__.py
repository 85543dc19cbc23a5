"""What runs in an engine process, beside the candidate's code: `worker` (the process: one engine's lifetime over its
channel), `transformers_engine` (the transformers stand-in, with `graphs` for its static-cache decode and CUDA-graph
replay) and `sglang_engine` (SGLang with the hotfloat_sglang plugin), and what they share with the validator: `wire`
(the channel's framing), `hostload` (process trees) and `presets` (the model shapes). Each engine is started by
hotfloat.qualify.host in a sandbox of its own. Nothing here imports hotfloat.qualify, the decision side
(tests/test_architecture.py holds the worker process to it): an engine serves batches and reports counts and audit
records; the validator alone times and judges them."""
