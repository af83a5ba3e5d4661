"""The explain story as one self-contained HTML page (filled in below)."""
import json


def render(story) -> str:
    return "<html><body><pre>" + json.dumps(story.to_json()) + "</pre></body></html>"
