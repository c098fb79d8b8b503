//! Rows that arrive in batches, in any order, from several inference workers: the values and
//! which rows are there.

use super::LabError;

/// `rows` rows of `width` values each, filled batch by batch.
#[derive(Debug, Clone)]
pub struct Streamed<T> {
    width: usize,
    values: Vec<T>,
    arrived: Vec<bool>,
    count: usize,
}

impl<T: Copy + Default> Streamed<T> {
    /// Room for `rows` rows of `width` values, none arrived.
    pub fn new(rows: usize, width: usize) -> Self {
        Self {
            width,
            values: vec![T::default(); rows * width],
            arrived: vec![false; rows],
            count: 0,
        }
    }

    /// Rows in all.
    pub fn rows(&self) -> usize {
        self.arrived.len()
    }

    /// Rows that have arrived.
    pub fn arrived(&self) -> usize {
        self.count
    }

    /// Every row has arrived.
    pub fn is_complete(&self) -> bool {
        self.count == self.rows()
    }

    /// Whether row `row` has arrived.
    pub fn has(&self, row: usize) -> bool {
        self.arrived.get(row).copied().unwrap_or(false)
    }

    /// The values of row `row` (zeros until it arrives).
    pub fn row(&self, row: usize) -> &[T] {
        &self.values[row * self.width..(row + 1) * self.width]
    }

    /// All values, row-major; complete only when [`Streamed::is_complete`].
    pub fn values(&self) -> &[T] {
        &self.values
    }

    /// Whether a batch of `len` values fits as rows `start..`.
    ///
    /// # Errors
    /// [`LabError::BatchOutOfRange`] for an empty or ragged batch, or one that runs past the
    /// last row.
    pub fn check_batch(&self, start: usize, len: usize) -> Result<(), LabError> {
        let width = self.width;
        if len == 0 || !len.is_multiple_of(width) || start + len / width > self.rows() {
            return Err(LabError::BatchOutOfRange {
                start,
                len,
                rows: self.rows(),
                num_classes: width,
            });
        }
        Ok(())
    }

    /// Stores `values` as rows `start..start + values.len() / width`; a row that arrives again
    /// is overwritten. Returns the number of rows that arrived for the first time.
    ///
    /// # Errors
    /// [`LabError::BatchOutOfRange`] for an empty or ragged batch, or one that runs past the
    /// last row.
    pub fn add(&mut self, start: usize, values: &[T]) -> Result<usize, LabError> {
        self.check_batch(start, values.len())?;
        let width = self.width;
        self.values[start * width..start * width + values.len()].copy_from_slice(values);
        let mut new = 0;
        for arrived in &mut self.arrived[start..start + values.len() / width] {
            if !*arrived {
                *arrived = true;
                new += 1;
            }
        }
        self.count += new;
        Ok(new)
    }
}
