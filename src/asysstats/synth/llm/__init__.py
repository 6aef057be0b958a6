"""The synthetic LLM-inference sample: a catalogue, step programs, a simulator and a tiler."""
