"""Process hygiene: memory handed back between stages, native libraries' chatter kept off stderr."""
