"""One upstream budget per wiki identity (docs/upstream.md): limits, slot-window allocation, API input."""
