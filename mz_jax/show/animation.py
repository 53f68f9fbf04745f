"""Frames with captions as an animation a browser opens: an animated SVG or an HTML page.

Both are one self-contained file (no script, font or image from elsewhere). The SVG plays by
itself, in a loop (SMIL ``<animate>`` on each frame's visibility), so it also shows in a README;
the HTML page has a slider, buttons to step and to play, and every caption in full.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence

CAPTION_LINE_HEIGHT = 16
"""Pixels a caption line takes under the frame of the SVG animation."""

CAPTION_CHARACTER_WIDTH = 7.3
"""Pixels a character of a caption takes (12 px monospace), to wrap captions to the frame."""


def svg_size(svg: str) -> tuple[float, float]:
    """``(width, height)`` in pixels of an ``<svg>`` element's ``width`` and ``height``
    attributes (numbers, or numbers with ``px``; pgx writes ``"123.0px"``).

    Raises:
      ValueError: if the first ``<svg>`` tag has no such attributes.
    """
    tag = re.search(r"<svg\b[^>]*>", svg)
    sizes = []
    for name in ("width", "height"):
        found = tag and re.search(rf'\b{name}="([0-9.]+)(?:px)?"', tag.group(0))
        if not found:
            raise ValueError(f"the frame's <svg> tag has no numeric {name}: {svg[:120]!r}")
        sizes.append(float(found.group(1)))
    return sizes[0], sizes[1]


def animated_svg(
    frames: Sequence[str], captions: Sequence[str], *, seconds_per_frame: float = 0.5
) -> str:
    """One SVG that shows ``frames[i]`` with ``captions[i]`` (one line each, under the frame)
    for ``seconds_per_frame`` seconds in turn, looping.

    Raises:
      ValueError: for no frames, a different number of captions, or a non-positive duration.
    """
    _check(frames, captions)
    if not seconds_per_frame > 0:
        raise ValueError(f"seconds_per_frame {seconds_per_frame!r} is invalid: allowed > 0")
    sizes = [svg_size(frame) for frame in frames]
    width = max(w for w, _ in sizes)
    height = max(h for _, h in sizes)
    columns = max(24, int(width / CAPTION_CHARACTER_WIDTH))
    wrapped = [wrap_caption(caption, columns) for caption in captions]
    caption_height = max(map(len, wrapped)) * CAPTION_LINE_HEIGHT + 4
    total = len(frames) * seconds_per_frame
    count = len(frames)
    groups = []
    for index, (frame, lines) in enumerate(zip(frames, wrapped, strict=True)):
        values, key_times = _visibility_keys(index, count)
        animate = (
            f'<animate attributeName="visibility" values="{values}" keyTimes="{key_times}" '
            f'calcMode="discrete" dur="{total:g}s" repeatCount="indefinite"/>'
            if count > 1
            else ""
        )
        text = "".join(
            f'<text x="4" y="{height + (row + 1) * CAPTION_LINE_HEIGHT - 2:g}" font-size="12" '
            f'font-family="monospace">{html.escape(line)}</text>'
            for row, line in enumerate(lines)
        )
        groups.append(
            f'<g visibility="{"visible" if index == 0 else "hidden"}">{animate}{frame}{text}</g>'
        )
    full_height = height + caption_height
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width:g}" height="{full_height:g}" '
        f'viewBox="0 0 {width:g} {full_height:g}"><rect width="100%" height="100%" '
        f'fill="white"/>{"".join(groups)}</svg>\n'
    )


def wrap_caption(caption: str, columns: int, separator: str = " · ") -> list[str]:
    """``caption`` in lines of at most ``columns`` characters, broken after its ``separator``s
    (a part longer than a line gets a line of its own)."""
    lines: list[str] = []
    for part in caption.split(separator):
        if lines and len(lines[-1]) + len(separator) + len(part) <= columns:
            lines[-1] += separator + part
        else:
            lines.append(part)
    return lines


def _visibility_keys(index: int, count: int) -> tuple[str, str]:
    """``(values, keyTimes)`` of a discrete animation visible in ``[index, index + 1) / count``
    of the loop and hidden elsewhere."""
    start, end = index / count, (index + 1) / count
    if index == 0:
        return "visible;hidden", f"0;{end:.6g}"
    if index == count - 1:
        return "hidden;visible", f"0;{start:.6g}"
    return "hidden;visible;hidden", f"0;{start:.6g};{end:.6g}"


def html_page(frames: Sequence[str], captions: Sequence[str], *, title: str) -> str:
    """One HTML page that shows the frames one at a time, with their captions, a slider, step
    and play buttons (and the arrow keys and space bar).

    Raises:
      ValueError: for no frames or a different number of captions.
    """
    _check(frames, captions)
    slides = "\n".join(
        f'<figure class="frame"{"" if index == 0 else " hidden"}>{frame}'
        f"<figcaption>{html.escape(caption)}</figcaption></figure>"
        for index, (frame, caption) in enumerate(zip(frames, captions, strict=True))
    )
    last = len(frames) - 1
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>
body {{ font-family: sans-serif; margin: 1.5em; }}
figcaption {{ font-family: monospace; margin-top: 0.5em; white-space: pre-wrap; }}
.controls {{ margin: 0.5em 0; }}
input[type=range] {{ width: 24em; vertical-align: middle; }}
</style></head>
<body>
<h1>{html.escape(title)}</h1>
<div class="controls">
<button id="previous">&#9664;</button> <button id="play">play</button>
<button id="next">&#9654;</button>
<input id="slider" type="range" min="0" max="{last}" value="0"> <span id="position"></span>
</div>
{slides}
<script>
const frames = document.querySelectorAll(".frame");
const slider = document.getElementById("slider");
const position = document.getElementById("position");
const play = document.getElementById("play");
let shown = 0, timer = null;
function show(index) {{
  index = Math.max(0, Math.min(frames.length - 1, index));
  frames[shown].hidden = true; frames[index].hidden = false; shown = index;
  slider.value = index; position.textContent = (index + 1) + " / " + frames.length;
}}
function toggle() {{
  if (timer) {{ clearInterval(timer); timer = null; play.textContent = "play"; return; }}
  if (shown === frames.length - 1) show(0);
  play.textContent = "pause";
  timer = setInterval(() => {{
    if (shown === frames.length - 1) toggle(); else show(shown + 1);
  }}, 400);
}}
slider.oninput = () => show(Number(slider.value));
document.getElementById("previous").onclick = () => show(shown - 1);
document.getElementById("next").onclick = () => show(shown + 1);
play.onclick = toggle;
document.onkeydown = (event) => {{
  if (event.key === "ArrowLeft") show(shown - 1);
  else if (event.key === "ArrowRight") show(shown + 1);
  else if (event.key === " ") {{ event.preventDefault(); toggle(); }}
}};
show(0);
</script>
</body></html>
"""


def _check(frames: Sequence[str], captions: Sequence[str]) -> None:
    if not frames:
        raise ValueError("frames is empty: an animation needs at least one frame")
    if len(captions) != len(frames):
        raise ValueError(f"{len(captions)} captions for {len(frames)} frames; allowed one a frame")
