//! PURE. A bounded buffer of the most recent text lines (log lines, event messages) that can be
//! read as one slice.

/// The last `capacity` lines pushed, oldest first.
///
/// Lines are kept in one `Vec`; the oldest are dropped in batches once the buffer holds twice
/// its capacity, so pushing is amortised O(1) and [`LineRing::lines`] is a plain slice.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub struct LineRing {
    capacity: usize,
    buf: Vec<String>,
}

impl LineRing {
    /// An empty ring keeping at most `capacity` lines (0 keeps none).
    pub fn new(capacity: usize) -> LineRing {
        LineRing {
            capacity,
            buf: Vec::new(),
        }
    }

    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Append one line, dropping the oldest beyond the capacity.
    pub fn push(&mut self, line: String) {
        if self.capacity == 0 {
            return;
        }
        self.buf.push(line);
        if self.buf.len() >= self.capacity.saturating_mul(2) {
            let excess = self.buf.len() - self.capacity;
            self.buf.drain(..excess);
        }
    }

    /// Append lines in order.
    pub fn extend(&mut self, lines: impl IntoIterator<Item = String>) {
        for line in lines {
            self.push(line);
        }
    }

    /// Replace the content by `lines` (the last `capacity` of them).
    pub fn replace(&mut self, lines: Vec<String>) {
        self.buf = lines;
        let excess = self.buf.len().saturating_sub(self.capacity);
        self.buf.drain(..excess);
    }

    /// The kept lines, oldest first.
    pub fn lines(&self) -> &[String] {
        let start = self.buf.len().saturating_sub(self.capacity);
        self.buf.get(start..).unwrap_or_default()
    }

    /// The newest line.
    pub fn last(&self) -> Option<&String> {
        self.lines().last()
    }

    pub fn len(&self) -> usize {
        self.lines().len()
    }

    pub fn is_empty(&self) -> bool {
        self.lines().is_empty()
    }

    pub fn clear(&mut self) {
        self.buf.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numbered(n: usize) -> impl Iterator<Item = String> {
        (0..n).map(|i| i.to_string())
    }

    #[test]
    fn keeps_the_newest_lines_in_order() {
        let mut ring = LineRing::new(3);
        ring.extend(numbered(2));
        assert_eq!(ring.lines(), ["0", "1"]);
        ring.extend(numbered(10).skip(2));
        assert_eq!(ring.lines(), ["7", "8", "9"]);
        assert_eq!(ring.last().map(String::as_str), Some("9"));
        assert_eq!(ring.len(), 3);
        assert!(ring.buf.len() < 6, "storage stays bounded");
    }

    #[test]
    fn replace_keeps_the_tail_and_zero_capacity_keeps_nothing() {
        let mut ring = LineRing::new(2);
        ring.replace(numbered(5).collect());
        assert_eq!(ring.lines(), ["3", "4"]);
        let mut none = LineRing::new(0);
        none.push("x".into());
        none.replace(vec!["y".into()]);
        assert!(none.is_empty());
    }
}
