"""A remote backend: any OpenAI-compatible chat endpoint (vLLM, SGLang, llama-server).

`options.py` holds what a face passes (no `openai` import, so options can be checked before
anything loads); `client.py` and `backend.py` are the only modules that import `openai`.
"""
