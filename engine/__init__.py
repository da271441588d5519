"""Word Factory's engine: a GPT-2-shaped decoder in NumPy, and its stopwatches.

A library with no web code (NumPy and the standard library only):

    tokenizer   the Chopper: text <-> byte tokens, streaming decode
    config      model shapes: the "gpt2-small" default and a "tiny" preset
    model       the Reader and the Typewriter: forward(new tokens, KV cache)
    kv_cache    the notebook: per-request keys and values, grown with use
    sampling    greedy, temperature, top-k with an explicit RNG
    generate    one request end to end, as a generator of events
    events      what a request reports, with perf_counter timestamps
    stopwatch   TTFT, ITL p50/p99, totals, tokens per second
    measure     `python -m engine.measure`: the seed's experiment
    bench       `python -m engine.bench`: speed against this machine's floors
"""
