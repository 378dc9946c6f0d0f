"""One feed's bounded buffer in a node process: batches in, epochs of records out.

The feed server's connection threads :meth:`~FeedBuffer.put` batches and the driver's markers
(end of an epoch, end of the feed). A batch waits while the buffer holds
:data:`DEFAULT_CAPACITY` batches of its kind (the feeding task's socket then fills and TCP
holds the sender back). There are two kinds, each bounded on its own: batches of the epoch
being read (or an earlier one), and batches of later epochs, fed ahead. So batches fed ahead
never keep out those the reader waits for, and a node holds at most twice the capacity.
``main_fun`` reads with :meth:`~FeedBuffer.epoch`, one call per epoch, through
``ctx.feed(name)``.

An epoch fed ahead whose ``train`` call is stopped before the reader begins it is withdrawn
(:meth:`~FeedBuffer.withdraw`): its batches are dropped, also those of its feeding job that
still come, and the next call's batches of that epoch number are read instead.

Bookkeeping per epoch: a batch already received (same feeding job, partition and sequence
number: a Spark task that was retried sends its batches again) is dropped, one still waiting
for room is waited for (so a connection's ``ack`` still means its batches are in), and at the
epoch's end the records received are compared with those the driver counted as sent. Batches
of an epoch the reader is done with (read, or its iteration left early) are dropped as they
come.
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable, Iterator
from typing import Any

from tfrecord_io.cluster.feed.batch_format import Batch, locate
from tfrecord_io.errors import ClusterError

__all__ = ["DEFAULT_CAPACITY", "FeedBuffer"]

#: Batches (each about :data:`~tfrecord_io.cluster.feed.plan.BATCH_BYTES`, 1 MiB, of records)
#: a feed buffers per node before feeders wait: about 32 MiB of the epoch being read, and as much
#: of later epochs.
DEFAULT_CAPACITY = 32
_POLL = 0.5

Demand = Callable[[str, int], None]


class FeedBuffer:
    """The buffer of feed *name* on one node (see the module docs).

    Args:
        name: the feed's name.
        capacity: batches held at most.
        on_demand: called as ``on_demand(name, epoch)`` when the reader starts an epoch: the
            driver feeds an epoch only once every node reading the feed asked for it.
    """

    def __init__(self, name: str, capacity: int, on_demand: Demand) -> None:
        self.name = name
        self._capacity = capacity
        self._on_demand = on_demand
        self._cond = threading.Condition()
        self._items: collections.deque[tuple[Any, ...]] = collections.deque()
        self._batches: collections.Counter[int] = collections.Counter()  # epoch -> batches
        self._started = 0
        self._left = 0  # the last epoch the reader is done with (read, or left early)
        self._closed = False  # no more epochs: the driver ended the feed
        self._stopped = False  # the reader is done: drop whatever comes
        self._unmarked: str | None = None  # why the driver's markers can no longer come
        self._seen: dict[int, set[tuple[int, int, int]]] = {}
        # batches put() holds while they wait for room: (epoch, key)
        self._landing: set[tuple[int, tuple[int, int, int]]] = set()
        self._received: dict[int, int] = {}
        self._withdrawn: set[tuple[int, int]] = set()  # (epoch, job): batches dropped as they come

    # -- from the connections ------------------------------------------------------------------

    @property
    def stopped(self) -> bool:
        """Whether the reader stopped (:meth:`stop`): feeders should drop their data."""
        return self._stopped

    def put(self, epoch: int, key: tuple[int, int, int], records: int, payload: Any) -> bool:
        """Queue one batch of *epoch* (*records* records laid out as in
        :mod:`~tfrecord_io.cluster.feed.batch_format`; waits while the buffer is full). Returns
        False when the feed is stopped, or the reader is done with *epoch* (an iteration left
        early skips the rest of its epoch): the batch is dropped."""
        with self._cond:
            if self._dropping(epoch) or (epoch, key[0]) in self._withdrawn:
                return False
            # A retried task's batch already here is dropped at once, never waiting for room
            # it would not take. One still on its way in (its first sender, say a task whose
            # executor was lost, waits for room) is waited for: the repeat's connection is
            # acknowledged, and the epoch may end, only once the batch is in.
            seen = self._seen.setdefault(epoch, set())
            if key in seen:
                while not self._dropping(epoch) and (epoch, key) in self._landing:
                    self._cond.wait(_POLL)
                return not self._dropping(epoch) and (epoch, key[0]) not in self._withdrawn
            seen.add(key)
            self._landing.add((epoch, key))
            try:
                while (not self._dropping(epoch) and (epoch, key[0]) not in self._withdrawn
                       and self._held(epoch > self._started) >= self._capacity):
                    self._cond.wait(_POLL)
            finally:
                self._landing.discard((epoch, key))
                self._cond.notify_all()
            if self._dropping(epoch) or (epoch, key[0]) in self._withdrawn:
                return False
            self._received[epoch] = self._received.get(epoch, 0) + records
            self._items.append(("data", epoch, payload, records, key))
            self._batches[epoch] += 1
            self._cond.notify_all()
        return True

    def _dropping(self, epoch: int) -> bool:
        """Whether a batch of *epoch* is dropped: the feed is stopped, or the reader is done
        with that epoch. Call with the lock held."""
        return self._stopped or epoch <= self._left

    def _held(self, ahead: bool) -> int:
        """Batches held of later epochs than the reader's (*ahead*), or of the others."""
        return sum(n for e, n in self._batches.items() if (e > self._started) == ahead)

    def end_epoch(self, epoch: int, sent: int | None) -> None:
        """The driver's marker: every batch of *epoch* is in; *sent* records were sent here
        (None: not counted)."""
        self._marker(("end", epoch, sent))

    def fail_epoch(self, epoch: int, reason: str) -> None:
        """The driver's marker: feeding *epoch* failed; the reader raises ClusterError."""
        self._marker(("fail", epoch, reason))

    def close(self) -> None:
        """The driver's marker: no more epochs. A reader's further epochs are empty."""
        self._marker(("close",))

    def lose_driver(self, reason: str) -> None:
        """The driver's link ended before the feed did (*reason*): no end or fail marker can
        come any more, so a reader that has taken what is buffered raises ClusterError instead
        of waiting for one."""
        with self._cond:
            self._unmarked = reason
            self._cond.notify_all()

    def withdraw(self, epoch: int, job: int) -> bool:
        """The driver's withdrawal of *epoch*, fed ahead by feeding job *job* and then stopped:
        unless the reader has begun it, its batches of that job are dropped, those held and
        those that still come, and the epoch is the next call's to feed. Whether it was
        withdrawn (False: the reader has begun it; the driver ends it instead)."""
        with self._cond:
            if self._started >= epoch and not self._stopped:
                return False
            self._withdrawn.add((epoch, job))
            kept: collections.deque[tuple[Any, ...]] = collections.deque()
            for item in self._items:
                if item[0] == "data" and item[1] == epoch and item[4][0] == job:
                    self._batches[epoch] -= 1
                    if not self._batches[epoch]:
                        del self._batches[epoch]
                    self._received[epoch] -= item[3]
                    self._seen[epoch].discard(item[4])
                else:
                    kept.append(item)
            self._items = kept
            self._cond.notify_all()
        return True

    def _marker(self, item: tuple[Any, ...]) -> None:
        with self._cond:
            self._items.append(item)
            self._cond.notify_all()

    def stop(self) -> None:
        """The reader is done: drop what is buffered and whatever still comes."""
        with self._cond:
            self._stopped = True
            self._items.clear()
            self._batches.clear()
            self._cond.notify_all()

    # -- the reader ----------------------------------------------------------------------------

    def epoch(self) -> Iterator[Batch]:
        """The next epoch, batch by batch (:class:`~tfrecord_io.cluster.feed.batch_format.Batch`:
        the batch's bytes and where each serialized record is). Empty when the
        feed has ended or was stopped. An epoch left unfinished is skipped: the rest of its
        batches are dropped as they come once its iteration is closed, or by the next call
        (and an iteration still open then ends).

        Raises:
            ClusterError: the driver reported that feeding this epoch failed; or fewer or more
                records arrived than were sent (which the exactly-once design rules out); or
                the driver's link to this node ended before the epoch did.
        """
        with self._cond:
            if self._stopped or self._closed:
                return
            # A new epoch while an earlier iteration is unfinished: that one ends now.
            self._started += 1
            epoch = self._started
            self._left = max(self._left, epoch - 1)
            self._cond.notify_all()  # this epoch's batches fed ahead count as the current now
        try:
            self._on_demand(self.name, epoch)
            while True:
                item = self._next(epoch)
                if item is None:
                    return
                yield item
        finally:
            # Read, failed or left early (the iteration closed, say by ``take``): the rest of
            # the epoch is dropped as it comes, so its feeding tasks end at once instead of
            # holding their task slots while the reader reads another feed.
            with self._cond:
                self._left = max(self._left, epoch)
                self._cond.notify_all()

    def _next(self, epoch: int) -> Batch | None:
        """The next batch of *epoch*; None at its end."""
        with self._cond:
            item = None
            while not self._stopped and self._started == epoch:
                item = self._take(epoch)
                if item is not None:
                    break
                if self._unmarked is not None:
                    raise ClusterError(
                        f"feed {self.name!r}, epoch {epoch}: the driver's link to this node "
                        f"ended ({self._unmarked}) before the epoch did: its end, and whether "
                        "every batch arrived, can no longer be known")
                self._cond.wait(_POLL)
            if item is None:  # stopped, or the reader went on to a new epoch
                return None
            kind = item[0]
            if kind == "close":
                self._closed = True
                return None
            if kind == "end":
                return self._ended(epoch, item[2])
            if kind == "fail":
                raise ClusterError(f"feeding epoch {epoch} of feed {self.name!r} failed on "
                                   f"the driver: {item[2]}")
        _, _, payload, records, key = item
        # The batch's AEAD tag (checked on arrival) covers every byte; the lengths table is
        # still checked against the payload before a record is cut.
        try:
            return locate(payload, records)
        except ValueError as e:
            job, partition, seq = key
            raise ClusterError(
                f"feed {self.name!r}, epoch {epoch}: a malformed batch (feeding job {job}, "
                f"partition {partition}, batch {seq}) {e}; the feeding tasks' jar and this "
                "node's tfrecord_io must be the same version"
            ) from e

    def _take(self, epoch: int) -> tuple[Any, ...] | None:
        """Remove and return the first item for a reader of *epoch*: its batch or marker, or the
        feed's end. Items of earlier epochs (one the reader left early) are dropped; those of
        later ones stay, in order: the driver may feed the next epoch before its end marker for
        this one arrives, and before the reader asks for it. Call with the lock held."""
        kept: list[tuple[Any, ...]] = []
        found = None
        while self._items:
            item = self._items.popleft()
            if item[0] == "data" and item[1] <= epoch:
                self._batches[item[1]] -= 1
                if not self._batches[item[1]]:
                    del self._batches[item[1]]
                self._cond.notify_all()
            if item[0] == "close" or item[1] == epoch:
                found = item
                break
            if item[1] > epoch:
                kept.append(item)
            elif item[0] == "end":  # the end of an epoch left early: forget its bookkeeping
                self._received.pop(item[1], None)
                self._seen.pop(item[1], None)
        self._items.extendleft(reversed(kept))
        return found

    def _ended(self, epoch: int, sent: int | None) -> None:
        received = self._received.pop(epoch, 0)
        self._seen.pop(epoch, None)
        if sent is not None and received != sent:
            raise ClusterError(
                f"feed {self.name!r}, epoch {epoch}: {received} records arrived on this node, "
                f"but the driver sent {sent}"
            )
        return None
