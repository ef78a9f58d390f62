"""Disjoint sets (union-find) for the allocator: copy coalescing joins the variables a copy
makes one (``coalesce``), the slot sizer the values a copy gives one width (``frame``).

Elements are any hashable keys (variable numbers, ``id``s); one never joined is its own set.
``find`` compresses paths (Tarjan), so a run of finds and unions costs nearly linear time.
Which element represents a set is the caller's choice: ``union(x, y)`` keeps ``y``'s
representative, because coalescing picks the variable a group is renamed to.
"""

from __future__ import annotations

TYPE_CHECKING = False   # typing is imported by type checkers only (start-up time)
if TYPE_CHECKING:
    from typing import Hashable, Iterator


class UnionFind:
    """Disjoint sets of hashable elements, each named by its representative."""

    def __init__(self) -> None:
        self._parent: dict[Hashable, Hashable] = {}

    def find(self, x: Hashable) -> Hashable:
        """The representative of ``x``'s set (``x`` itself when never joined)."""
        parent = self._parent
        root = x
        while True:
            up = parent.get(root, root)
            if up == root:
                break
            root = up
        while x != root:                     # path compression: point the walk at the root
            up = parent[x]
            parent[x] = root
            x = up
        return root

    def union(self, x: Hashable, y: Hashable) -> Hashable:
        """Join the sets of ``x`` and ``y``; the joined set keeps ``y``'s representative,
        which is returned."""
        a, b = self.find(x), self.find(y)
        if a != b:
            self._parent[a] = b
        return b

    def joined(self) -> Iterator[Hashable]:
        """The elements that are not their set's representative (each was joined to
        another), in the order they were first joined."""
        return iter(self._parent)
