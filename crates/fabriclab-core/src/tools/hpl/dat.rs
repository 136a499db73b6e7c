//! HPL's input file, `HPL.dat`, read the way `HPL_pdinfo` reads it: two
//! title lines, then one value (or a count followed by a line of values)
//! per line, each line's leading tokens taken and the rest of the line
//! (the comment) ignored.
//!
//! Left out: the output file name and device (lines 3 and 4; the text goes
//! wherever the caller writes it) and the threshold's effect (no residual
//! is computed; see `hpl.rs`).

use crate::error::{arg_err, Result};

/// The settings of an HPL.dat file.
#[derive(Clone, Debug, PartialEq)]
pub struct Dat {
    /// Ns.
    pub n: Vec<u64>,
    /// NBs.
    pub nb: Vec<u64>,
    /// PMAP: 0 row-major, 1 column-major.
    pub pmap: u32,
    /// (P, Q) pairs.
    pub grids: Vec<[u32; 2]>,
    /// Residual threshold.
    pub threshold: f64,
    /// PFACTs (0 left, 1 Crout, 2 right).
    pub pfact: Vec<u32>,
    /// NBMINs.
    pub nbmin: Vec<u32>,
    /// NDIVs.
    pub ndiv: Vec<u32>,
    /// RFACTs.
    pub rfact: Vec<u32>,
    /// BCASTs (0..5).
    pub bcast: Vec<u32>,
    /// DEPTHs.
    pub depth: Vec<u32>,
    /// SWAP (0 binary exchange, 1 long, 2 mix).
    pub swap: u32,
    /// Swapping threshold.
    pub swap_threshold: u64,
    /// L1 form: 0 transposed, 1 not.
    pub l1: u32,
    /// U form: 0 transposed, 1 not.
    pub u: u32,
    /// Equilibration.
    pub equil: u32,
    /// Memory alignment in doubles.
    pub align: u32,
}

/// HPL's limit on each list.
pub const MAX_PARAMS: usize = 20;

struct Lines<'a> {
    it: std::iter::Enumerate<std::str::Lines<'a>>,
}

impl<'a> Lines<'a> {
    /// The next line's first `k` whitespace-separated tokens.
    fn tokens(&mut self, what: &str, k: usize) -> Result<(usize, Vec<&'a str>)> {
        let Some((i, line)) = self.it.next() else {
            return arg_err(format!(
                "HPL.dat ends before the {what} line; compare it with HPL's sample HPL.dat"
            ));
        };
        let toks: Vec<&str> = line.split_whitespace().take(k).collect();
        if toks.len() < k {
            return arg_err(format!(
                "HPL.dat line {}: expected {k} value(s) for {what}, found {:?}",
                i + 1,
                line.trim()
            ));
        }
        Ok((i + 1, toks))
    }

    fn one<T: std::str::FromStr>(&mut self, what: &str) -> Result<T> {
        let (ln, t) = self.tokens(what, 1)?;
        parse(ln, what, t[0])
    }

    /// The next line's value, or `default` if the file ends (blank lines
    /// count as the end).
    fn optional<T: std::str::FromStr>(&mut self, what: &str, default: T) -> Result<T> {
        match self.it.next() {
            Some((i, line)) => match line.split_whitespace().next() {
                Some(tok) => parse(i + 1, what, tok),
                None => Ok(default),
            },
            None => Ok(default),
        }
    }

    fn count(&mut self, what: &str) -> Result<usize> {
        let n: usize = self.one(&format!("number of {what}"))?;
        if n == 0 || n > MAX_PARAMS {
            return arg_err(format!(
                "HPL.dat: the number of {what} must be 1..{MAX_PARAMS}, got {n}"
            ));
        }
        Ok(n)
    }

    fn list<T: std::str::FromStr>(&mut self, what: &str, n: usize) -> Result<Vec<T>> {
        let (ln, t) = self.tokens(what, n)?;
        t.iter().map(|s| parse(ln, what, s)).collect()
    }
}

fn parse<T: std::str::FromStr>(line: usize, what: &str, s: &str) -> Result<T> {
    s.parse().or_else(|_| {
        arg_err(format!(
            "HPL.dat line {line}: {what} must be a number, got {s:?}"
        ))
    })
}

/// Read an HPL.dat file's text.
pub fn parse_dat(text: &str) -> Result<Dat> {
    let mut l = Lines {
        it: text.lines().enumerate(),
    };
    l.tokens("title", 0)?;
    l.tokens("second title", 0)?;
    l.tokens("output file name", 1)?;
    l.tokens("device out", 1)?;
    let ns = l.count("problem sizes (N)")?;
    let n = l.list("Ns", ns)?;
    let nbs = l.count("NBs")?;
    let nb = l.list("NBs", nbs)?;
    let pmap = l.one("PMAP")?;
    let npq = l.count("process grids (P x Q)")?;
    let ps: Vec<u32> = l.list("Ps", npq)?;
    let qs: Vec<u32> = l.list("Qs", npq)?;
    let threshold = l.one("threshold")?;
    let npf = l.count("panel facts")?;
    let pfact = l.list("PFACTs", npf)?;
    let nbm = l.count("recursive stopping criteria")?;
    let nbmin = l.list("NBMINs", nbm)?;
    let ndv = l.count("panels in recursion")?;
    let ndiv = l.list("NDIVs", ndv)?;
    let nrf = l.count("recursive panel facts")?;
    let rfact = l.list("RFACTs", nrf)?;
    let nbc = l.count("broadcasts")?;
    let bcast = l.list("BCASTs", nbc)?;
    let ndh = l.count("lookahead depths")?;
    let depth = l.list("DEPTHs", ndh)?;
    let swap = l.one("SWAP")?;
    let swap_threshold = l.one("swapping threshold")?;
    let l1 = l.one("L1 form")?;
    let u = l.one("U form")?;
    // The last two lines may be missing (older files lack them); if
    // present they must be numbers.
    let equil = l.optional("Equilibration", 1)?;
    let align = l.optional("memory alignment", 8)?;
    Ok(Dat {
        n,
        nb,
        pmap,
        grids: ps.into_iter().zip(qs).map(|(p, q)| [p, q]).collect(),
        threshold,
        pfact,
        nbmin,
        ndiv,
        rfact,
        bcast,
        depth,
        swap,
        swap_threshold,
        l1,
        u,
        equil,
        align,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = include_str!("../../../tests/data/hpl_HPL.dat");

    #[test]
    fn reads_hpls_sample_file() {
        let d = parse_dat(SAMPLE).unwrap();
        assert_eq!(d.n, vec![2000]);
        assert_eq!(d.nb, vec![128]);
        assert_eq!(d.grids, vec![[1, 2], [2, 1]]);
        assert_eq!(d.threshold, 16.0);
        assert_eq!((d.pfact.clone(), d.rfact.clone()), (vec![2], vec![1]));
        assert_eq!(
            (d.nbmin[0], d.ndiv[0], d.bcast[0], d.depth[0]),
            (4, 2, 1, 1)
        );
        assert_eq!((d.swap, d.swap_threshold), (2, 64));
        assert_eq!((d.l1, d.u, d.equil, d.align, d.pmap), (0, 0, 1, 8, 0));
    }

    #[test]
    fn says_which_line_is_wrong() {
        let bad = SAMPLE.replacen("2000         Ns", "2k           Ns", 1);
        let e = parse_dat(&bad).unwrap_err().to_string();
        assert!(e.contains("line 6") && e.contains("\"2k\""), "{e}");
        let short: String = SAMPLE.lines().take(9).collect::<Vec<_>>().join("\n");
        let e = parse_dat(&short).unwrap_err().to_string();
        assert!(e.contains("ends before"), "{e}");
        let many = SAMPLE.replacen(
            "1            # of problems",
            "21           # of problems",
            1,
        );
        let e = parse_dat(&many).unwrap_err().to_string();
        assert!(e.contains("1..20"), "{e}");
    }
}
