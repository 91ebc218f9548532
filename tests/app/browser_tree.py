"""What a browser builds from a run's messages when Streamlit's server sends them in one batch: the worst case of its
message queue, which composes a message onto an earlier one at the same place still unsent (ForwardMsgQueue), so a
message can land before a block that a later message replaced. How many messages go in one batch depends on how busy
the server is, so a page that breaks only in one batch breaks now and then, on a loaded machine (a new visit to
kv_cache once went blank in the browser: "Cannot set a node at a delta path").

The tree follows Streamlit's frontend (AppRoot.applyDelta in its bundle): a block written where a block of the same
type stands keeps that block's children, anything else starts empty; a message whose parent path is not there fails.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
from streamlit.runtime.forward_msg_queue import ForwardMsgQueue


class BrokenTree(Exception):
    """The browser would fail here and show a blank page."""


@dataclass
class Block:
    kind: str
    children: list[Block | str] = field(default_factory=list)


@contextmanager
def recorded() -> Iterator[list[ForwardMsg]]:
    """Every message a run enqueues, in order, before the queue composes them."""
    messages: list[ForwardMsg] = []

    def keep(message: ForwardMsg) -> None:
        copy = ForwardMsg()
        copy.CopyFrom(message)
        messages.append(copy)

    ForwardMsgQueue.on_before_enqueue_msg(keep)
    try:
        yield messages
    finally:
        ForwardMsgQueue.on_before_enqueue_msg(None)


def one_batch(messages: list[ForwardMsg]) -> list[ForwardMsg]:
    """The messages as the server sends them when none was sent before the last was enqueued."""
    queue = ForwardMsgQueue()
    for message in messages:
        queue.enqueue(message)
    return queue.flush()


def build(messages: list[ForwardMsg], onto: Block | None = None) -> Block:
    """The page's tree from the messages, as the browser applies them (onto the tree a run before left); BrokenTree
    where the browser throws."""
    root = onto or Block("root", [Block("main"), Block("sidebar"), Block("event"), Block("bottom")])
    for message in messages:
        if message.HasField("delta"):
            _apply(root, list(message.metadata.delta_path), message.delta)
    return root


def _apply(root: Block, path: list[int], delta) -> None:
    parent: Block | str = root
    for index in path[:-1]:
        if not isinstance(parent, Block):
            raise BrokenTree(f"{path}: 'setIn' cannot be called on an ElementNode")
        if index >= len(parent.children):
            raise BrokenTree(f"{path}: Cannot set a node at a delta path")
        parent = parent.children[index]
    if not isinstance(parent, Block):
        raise BrokenTree(f"{path}: 'setIn' cannot be called on an ElementNode")
    index = path[-1]
    if index > len(parent.children):
        raise BrokenTree(f"{path}: Bad delta path index {index}")
    old = parent.children[index] if index < len(parent.children) else None
    kind = delta.WhichOneof("type")
    if kind == "add_block":
        block_kind = delta.add_block.WhichOneof("type") or "vertical"
        kept = old.children if isinstance(old, Block) and old.kind == block_kind else []
        node: Block | str = Block(block_kind, kept)
    elif kind == "new_transient" and old is not None:
        node = old  # a spinner shown over what stands there
    else:
        node = delta.new_element.WhichOneof("type") or kind
    if old is None:
        parent.children.append(node)
    else:
        parent.children[index] = node
