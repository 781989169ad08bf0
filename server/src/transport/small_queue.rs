//! A FIFO queue that holds its first element inline: most of the gateway's queues (a unary
//! response's one settle, a response's one message end) never hold more than one, and an
//! allocation per call would cost more than the queue.

use std::collections::VecDeque;

/// A FIFO queue whose first element needs no allocation.
#[derive(Debug)]
pub(super) struct SmallQueue<T> {
    head: Option<T>,
    tail: VecDeque<T>,
}

impl<T> Default for SmallQueue<T> {
    fn default() -> Self {
        Self { head: None, tail: VecDeque::new() }
    }
}

impl<T> SmallQueue<T> {
    /// Adds `item` at the back.
    pub(super) fn push_back(&mut self, item: T) {
        if self.head.is_none() && self.tail.is_empty() {
            self.head = Some(item);
        } else {
            self.tail.push_back(item);
        }
    }

    /// The front item.
    pub(super) fn front(&self) -> Option<&T> {
        self.head.as_ref().or_else(|| self.tail.front())
    }

    /// Removes the front item.
    pub(super) fn pop_front(&mut self) -> Option<T> {
        self.head.take().or_else(|| self.tail.pop_front())
    }

    /// Items held.
    #[allow(clippy::len_without_is_empty)] // the queues are only ever pushed and drained
    pub(super) fn len(&self) -> usize {
        usize::from(self.head.is_some()) + self.tail.len()
    }

    /// Removes every item, front first.
    pub(super) fn drain(&mut self) -> impl Iterator<Item = T> + '_ {
        self.head.take().into_iter().chain(self.tail.drain(..))
    }
}

impl<T> Extend<T> for SmallQueue<T> {
    fn extend<I: IntoIterator<Item = T>>(&mut self, items: I) {
        for item in items {
            self.push_back(item);
        }
    }
}

impl<T> IntoIterator for SmallQueue<T> {
    type Item = T;
    type IntoIter =
        std::iter::Chain<std::option::IntoIter<T>, std::collections::vec_deque::IntoIter<T>>;

    fn into_iter(self) -> Self::IntoIter {
        self.head.into_iter().chain(self.tail)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    proptest! {
        /// It behaves as a VecDeque used as a FIFO, whatever the pushes and pops.
        #[test]
        fn it_is_a_fifo(ops in proptest::collection::vec(any::<Option<u8>>(), 0..64)) {
            let (mut small, mut model) = (SmallQueue::default(), VecDeque::new());
            for op in ops {
                match op {
                    Some(item) => {
                        small.push_back(item);
                        model.push_back(item);
                    }
                    None => prop_assert_eq!(small.pop_front(), model.pop_front()),
                }
                prop_assert_eq!(small.front(), model.front());
                prop_assert_eq!(small.len(), model.len());
            }
            prop_assert_eq!(small.into_iter().collect::<Vec<_>>(), model.into_iter().collect::<Vec<_>>());
        }
    }
}
