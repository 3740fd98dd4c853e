"""Notice a degenerate loop: the same short span repeated over and over (e.g. 4,096 newlines).

Small or badly prompted models fall into such loops and would fill `max_tokens` with
them. For each period p of 1..MAX_SPAN characters we keep how long the text has been
p-periodic (each new character equals the one p before it): constant work per
character, so linear in the length of the answer.

Normal output repeats too (a table of dashes, a run of blank lines, `yes` on a screen),
so a loop counts only when it is long: at least MIN_REPEATS repeats of the span and at
least MIN_CHARS characters in all.
"""

from __future__ import annotations

MAX_SPAN = 32
MIN_REPEATS = 100
MIN_CHARS = 1000
#: Texts up to this long take the sliced path (a token's; a server's chunks may be longer).
_SHORT = 64


def loop_length_needed(span: int) -> int:
    """Characters of p-periodic text that count as a degenerate loop of a span of length p."""
    return max(MIN_CHARS, MIN_REPEATS * span)


class RepetitionDetector:
    def __init__(self) -> None:
        self._recent = ""  # the last MAX_SPAN characters
        # _run[p]: how many of the latest characters each equal the character p before them.
        self._run = [0] * (MAX_SPAN + 1)
        self._needed = [loop_length_needed(p) for p in range(MAX_SPAN + 1)]
        self.looping = False
        self.span = ""  # the repeated span, once looping

    def feed(self, text: str) -> bool:
        """Add generated text; True once the text ends in a degenerate loop."""
        if self.looping:
            return True
        if len(self._recent) == MAX_SPAN and len(text) <= _SHORT:
            return self._feed_short(text)
        return self._feed_chars(text)

    def _feed_short(self, text: str) -> bool:
        """`_feed_chars` for a token's text once MAX_SPAN characters came: each period compares
        the new characters with those p before them as one slice (in C), not one at a time.
        A run cannot reach a loop's length after a mismatch inside text this short, so only
        the run the text continues can end in a loop, at a character found by arithmetic.
        Per token this runs for every period: a mismatch costs one character comparison unless
        the run it breaks was long enough to matter."""
        n = len(text)
        if not n:
            return False
        recent, run, needed = self._recent, self._run, self._needed
        combined, last = recent + text, text[-1]
        first: tuple[int, int] | None = None  # (character of the text, period) that makes a loop
        for p in range(1, MAX_SPAN + 1):
            older = combined[MAX_SPAN - p : MAX_SPAN - p + n]
            before = run[p]
            if older == text:
                leading, run[p] = n, before + n
            else:
                # The characters that continue the run: only worth finding when they could end a loop.
                leading = 0
                if before + n - 1 + p >= needed[p]:
                    while text[leading] == older[leading]:
                        leading += 1
                # The run the text's last characters start (a loop: a generator costs more here).
                trailing = 0
                if older[-1] == last:
                    trailing = 1
                    while text[-1 - trailing] == older[-1 - trailing]:
                        trailing += 1
                run[p] = trailing
            if before + leading + p >= needed[p]:
                at = needed[p] - p - before - 1  # the character whose run is long enough
                if first is None or at < first[0]:
                    first = (at, p)
        if first is not None:
            at, p = first
            seen = combined[: MAX_SPAN + at + 1]
            self.looping, self.span, self._recent = True, seen[-p:], seen[-MAX_SPAN:]
            return True
        self._recent = combined[-MAX_SPAN:]
        return False

    def _feed_chars(self, text: str) -> bool:
        recent, run, needed = self._recent, self._run, self._needed
        for char in text:
            size = len(recent)
            for p in range(1, MAX_SPAN + 1):
                if p <= size and recent[size - p] == char:
                    run[p] += 1
                    if run[p] + p >= needed[p]:
                        self.looping = True
                        self.span = (recent + char)[-p:]
                        self._recent = (recent + char)[-MAX_SPAN:]
                        return True
                else:
                    run[p] = 0
            recent = (recent + char)[-MAX_SPAN:]
        self._recent = recent
        return False
