def render(story): return ""
