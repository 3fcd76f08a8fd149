"""What people send back: each platform's inbound routes (webhooks, interactions, the web form).

One folder or module per platform; the rendering and parsing they use live in ``channels/<platform>``.
"""
