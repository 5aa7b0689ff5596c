"""A tiny random-weight Llama and its tokenizer, built in-process (no model hub).

Hidden size 256 with 4 heads (head_dim 64: the CPU attention of vLLM does not take 16), two
layers, a byte-level BPE tokenizer trained on plain words. Good for engine and collector tests,
useless for text.
"""

from __future__ import annotations

import random
from pathlib import Path

from fleetplan.collectors.prompts import WORDS


def build_tiny_llama(folder: Path, *, seed: int = 0, max_positions: int = 4096) -> Path:
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(seed)
    corpus = [" ".join(rng.choices(WORDS, k=64)) for _ in range(2000)]
    tokenizer = Tokenizer(models.BPE(unk_token=None))
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=1024,
        special_tokens=["<s>", "</s>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tokenizer.train_from_iterator(corpus, trainer=trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tokenizer, bos_token="<s>", eos_token="</s>")
    fast.save_pretrained(folder)

    torch.manual_seed(seed)
    config = LlamaConfig(
        vocab_size=len(fast),
        hidden_size=256,
        intermediate_size=512,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=max_positions,
        bos_token_id=fast.bos_token_id,
        eos_token_id=fast.eos_token_id,
        tie_word_embeddings=False,
        torch_dtype="bfloat16",
    )
    model = LlamaForCausalLM(config).to(torch.bfloat16)
    model.save_pretrained(folder, safe_serialization=True)
    return folder


if __name__ == "__main__":
    import sys

    print(build_tiny_llama(Path(sys.argv[1])))


# What a test's engine needs and a benchmark's must not have: no torch.compile (-O0) and a KV
# cache of 256 MiB instead of 30 % of the RAM. The engine then starts in about 25 s, not 70 s;
# its decode steps are slower (eager), which a benchmark of the server's speed would measure.
QUICK_ENGINE_ARGS = ["-O0", "--kv-cache-memory-bytes=268435456"]


def cpu_server_command(model: str | Path, port: int, *, quick: bool = False) -> list[str]:
    """The vLLM server command `fleetplan collect --backend vllm` builds for `model`, with what
    vLLM's CPU build needs: the KV cache sized in RAM (0.3) and a short context; `quick`: with
    `QUICK_ENGINE_ARGS` (for tests)."""
    from fleetplan.collectors.options import CollectOptions
    from fleetplan.collectors.vllm_server import server_command

    engine_args = ["--gpu-memory-utilization=0.3", "--max-model-len=1024"]
    options = CollectOptions.from_mapping(
        {
            "backend": "vllm",
            "model": str(model),
            "dtype": "bfloat16",
            "engine_arg": [*engine_args, *(QUICK_ENGINE_ARGS if quick else [])],
        }
    )
    return server_command(options, port)
