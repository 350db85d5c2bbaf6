"""The local model: a transformers or llama.cpp model run in this process (model.py registers the engine),
its CPU runtime, batching, saved prompt states, LoRA adapters and ZeroGPU."""
