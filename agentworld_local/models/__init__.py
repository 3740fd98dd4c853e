"""Model files: the registry, hub downloads, GGUF checks and inspection, memory estimates,
hardware facts and the offload plan. Nothing here imports llama_cpp (engine/llama/ does)."""
