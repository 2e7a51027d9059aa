//! The layout torch gives a copy it makes with
//! `memory_format=torch.preserve_format` (`Tensor.to(dtype)`,
//! `empty_like`): a view that is non-overlapping and dense keeps its
//! strides; any other view gets the layout its strides suggest, channels
//! last or row-major (`suggest_memory_format`). Our copies are always
//! row-major; this module says which layout torch's would have had, for
//! the rules of torch that read the layout of such a copy.

use super::layout::contiguous_strides;
use super::Strides;

/// The strides of torch's `preserve_format` copy of a view of `shape` and
/// element `strides` (of the same length).
pub(crate) fn preserve_format_strides(shape: &[usize], strides: &[isize]) -> Strides {
    if is_non_overlapping_and_dense(shape, strides) {
        return strides.into();
    }
    match channels_last_order(shape, strides) {
        Some(order) => strides_in_order(shape, order),
        None => contiguous_strides(shape),
    }
}

/// `is_non_overlapping_and_dense`: some order of the dims of more than one
/// element packs them with no gap and no overlap (dims of 0 or 1 elements
/// take any stride).
fn is_non_overlapping_and_dense(shape: &[usize], strides: &[isize]) -> bool {
    let mut dims: Vec<usize> = (0..shape.len()).filter(|&d| shape[d] >= 2).collect();
    dims.sort_by_key(|&d| strides[d]);
    let mut expected = 1isize;
    for d in dims {
        if strides[d] != expected {
            return false;
        }
        expected = expected.saturating_mul(shape[d] as isize);
    }
    true
}

/// The dims, fastest first, of the channels-last layout torch infers from
/// the strides of a 4-d (NCHW) or 5-d (NCDHW) view, if it infers one
/// (`is_channels_last_strides_2d_s4` and `_3d_s5`): channels fastest, then
/// the spatial dims from the last, then the batch, with strides that do not
/// decrease in that order. Ambiguous layouts (a channel stride of 0, a
/// batch whose stride equals the channels') are row-major, as in torch.
fn channels_last_order(shape: &[usize], strides: &[isize]) -> Option<&'static [usize]> {
    let order: &'static [usize] = match shape.len() {
        4 => &[1, 3, 2, 0],
        5 => &[1, 4, 3, 2, 0],
        _ => return None,
    };
    if strides[1] == 0 {
        return None;
    }
    let mut min = 0isize;
    for &d in order {
        if shape[d] == 0 || strides[d] < min || (d == 0 && min == strides[1]) {
            return None;
        }
        min = strides[d];
        if shape[d] > 1 {
            min = min.saturating_mul(shape[d] as isize);
        }
    }
    Some(order)
}

/// Packed strides of `shape` with the dims laid out in `order`, fastest
/// first (`get_channels_last_strides_2d` and `_3d` for torch's orders).
fn strides_in_order(shape: &[usize], order: &[usize]) -> Strides {
    let mut strides: Strides = smallvec::SmallVec::from_elem(0, shape.len());
    let mut acc = 1isize;
    for &d in order {
        strides[d] = acc;
        acc = acc.saturating_mul(shape[d] as isize);
    }
    strides
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dense_views_keep_their_strides() {
        // A transpose and a permute are dense: torch's copy keeps them.
        assert_eq!(
            &preserve_format_strides(&[9, 3, 1, 4], &[4, 36, 4, 1])[..],
            &[4, 36, 4, 1]
        );
        assert_eq!(&preserve_format_strides(&[4, 3], &[1, 4])[..], &[1, 4]);
        // Dims of one element take any stride.
        assert!(is_non_overlapping_and_dense(&[2, 1, 3], &[3, 100, 1]));
        assert!(is_non_overlapping_and_dense(&[], &[]));
        assert!(is_non_overlapping_and_dense(&[5], &[1]));
    }

    #[test]
    fn gaps_and_overlaps_are_not_dense() {
        assert!(!is_non_overlapping_and_dense(&[4, 3], &[6, 2])); // stepped slice
        assert!(!is_non_overlapping_and_dense(&[4, 3], &[0, 1])); // broadcast
        assert!(!is_non_overlapping_and_dense(&[5], &[2]));
        // A stepped slice of a row-major view copies row-major.
        assert_eq!(&preserve_format_strides(&[4, 3], &[6, 2])[..], &[3, 1]);
        assert_eq!(&preserve_format_strides(&[4, 3], &[0, 1])[..], &[3, 1]);
    }

    #[test]
    fn channels_last_views_with_gaps_copy_channels_last() {
        // [N, C, H, W] = [2, 3, 4, 5] channels last (strides [60, 1, 15, 3]),
        // with every other row of H taken: strides [60, 1, 30, 3], not dense.
        let (shape, strides) = ([2, 3, 2, 5], [60, 1, 30, 3]);
        assert!(!is_non_overlapping_and_dense(&shape, &strides));
        assert_eq!(
            &preserve_format_strides(&shape, &strides)[..],
            &[30, 1, 15, 3]
        );
        // The same in 5-d: [N, C, D, H, W] = [2, 3, 2, 4, 5] channels last,
        // every other W.
        let (shape, strides) = ([2, 3, 2, 4, 3], [240, 1, 120, 30, 6]);
        assert_eq!(
            &preserve_format_strides(&shape, &strides)[..],
            &[72, 1, 36, 9, 3]
        );
        // A channel stride of 0 (a broadcast channel) is row-major.
        assert_eq!(
            &preserve_format_strides(&[2, 3, 2, 5], &[60, 0, 30, 3])[..],
            &[30, 10, 5, 1]
        );
    }
}
