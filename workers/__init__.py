"""RQ job functions: take an id, load state, call the channel, record what was done."""
