"""The call runtime: prompts, reply schemas, one `ask` per call, deadline, events, pool, `Run`.

Backends (:mod:`debate.models`) move bytes; everything that turns a reply into a typed object,
re-asks, counts usage or decides what is cached happens here, with the model pool (cache and
rate limiter) and pricing.
"""
