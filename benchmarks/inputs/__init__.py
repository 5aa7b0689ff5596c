"""What the benchmarks (and the tests) make their inputs from, standing on the installed package
alone: `tiny_model` (a random-weight Llama and its tokenizer, built in-process, and the vLLM CPU
server's command for it), `vllm_results` (vLLM serving-benchmark results computed as vLLM computes
them), `fuzzing` (mutations of real result files), `tables` (benchmark tables in the canonical CSV
layout), `shared_data` (where the shared data beside the checkout is), and `stream_server` (a
streaming OpenAI-compatible server of set TTFT and TPOT, on `openai_stub`'s routes)."""
