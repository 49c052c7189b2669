//! Text sparklines: a history resampled into one character per time bin.

const LEVELS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

/// A sparkline of `cells` characters for `points` (time, value) over `[from, to]`: each cell
/// shows the highest value of its time bin (peaks matter), scaled to `ceiling` or, when `None`,
/// to the highest value shown. Bins without data are blank.
pub(crate) fn sparkline(
    points: &[(f64, f64)],
    from: f64,
    to: f64,
    cells: usize,
    ceiling: Option<f64>,
) -> String {
    let span = to - from;
    if cells == 0 || span.is_nan() || span <= 0.0 {
        return " ".repeat(cells);
    }
    let mut bins: Vec<Option<f64>> = vec![None; cells];
    for &(t, v) in points {
        if !v.is_finite() || t < from || t > to {
            continue;
        }
        let i = (((t - from) / span) * cells as f64).floor() as usize;
        if let Some(bin) = bins.get_mut(i.min(cells - 1)) {
            *bin = Some(bin.map_or(v, |b: f64| b.max(v)));
        }
    }
    let top = ceiling
        .filter(|c| *c > 0.0)
        .unwrap_or_else(|| bins.iter().flatten().fold(0.0, |a: f64, b| a.max(*b)));
    bins.iter()
        .map(|bin| match bin {
            None => ' ',
            Some(v) if top > 0.0 => {
                let level = ((v / top).clamp(0.0, 1.0) * (LEVELS.len() - 1) as f64).round();
                LEVELS.get(level as usize).copied().unwrap_or('▁')
            }
            Some(_) => LEVELS[0],
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_take_the_peak_and_gaps_stay_blank() {
        // Four bins of 10 s over [0, 40]: bin 0 holds 1 and 7 (peak 7), bin 1 nothing,
        // bin 2 holds 0, bin 3 holds 3.5. Scaled to 7: levels 7, -, 0, 3.5/7*7 = 3.5 → 4.
        let points = [(1.0, 1.0), (5.0, 7.0), (25.0, 0.0), (35.0, 3.5)];
        assert_eq!(sparkline(&points, 0.0, 40.0, 4, None), "█ ▁▅");
    }

    #[test]
    fn a_ceiling_fixes_the_scale() {
        let points = [(0.0, 0.5), (10.0, 1.0)];
        assert_eq!(sparkline(&points, 0.0, 20.0, 2, Some(1.0)), "▅█");
    }

    #[test]
    fn nothing_to_show() {
        assert_eq!(sparkline(&[], 0.0, 10.0, 3, None), "   ");
        assert_eq!(sparkline(&[(1.0, 2.0)], 5.0, 5.0, 2, None), "  ");
        assert_eq!(sparkline(&[(1.0, 0.0)], 0.0, 2.0, 1, None), "▁");
        assert_eq!(sparkline(&[(1.0, 2.0)], 0.0, 2.0, 0, None), "");
    }
}
