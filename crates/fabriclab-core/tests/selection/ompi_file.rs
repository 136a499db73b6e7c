//! Open MPI's condensed C: `if (communicator_size < X) { if (total_dsize <
//! T) -> alg else ... } else if ... else { ... }`, with
//! `if( !ompi_op_is_commute(op) )` around the non-commutative tree.

/// A condition of an `if`.
#[derive(Debug)]
pub enum Cond {
    CommLt(u32),
    CommEq(u32),
    SizeLt(u64),
    NotCommute,
}

/// An `if` chain: a leaf algorithm number, or a test with two branches.
#[derive(Debug)]
pub enum Node {
    Leaf(u32),
    If(Cond, Box<Node>, Option<Box<Node>>),
}

/// One `===` section: collective name, algorithm table, decision tree.
pub struct Section {
    pub coll: String,
    pub algs: Vec<(u32, String)>,
    pub tree: Node,
}

fn tokens(s: &str) -> Vec<String> {
    let cs: Vec<char> = s.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < cs.len() {
        let c = cs[i];
        if c.is_whitespace() {
            i += 1;
        } else if c.is_ascii_alphanumeric() || c == '_' {
            let st = i;
            while i < cs.len() && (cs[i].is_ascii_alphanumeric() || cs[i] == '_') {
                i += 1;
            }
            out.push(cs[st..i].iter().collect());
        } else if (c == '-' && cs.get(i + 1) == Some(&'>'))
            || (c == '=' && cs.get(i + 1) == Some(&'='))
        {
            out.push(cs[i..i + 2].iter().collect());
            i += 2;
        } else {
            out.push(c.to_string());
            i += 1;
        }
    }
    out
}

struct Parser {
    t: Vec<String>,
    i: usize,
}

impl Parser {
    fn next(&mut self) -> String {
        let t = self.t.get(self.i).cloned().expect("rule text ends early");
        self.i += 1;
        t
    }
    fn peek(&self) -> Option<&str> {
        self.t.get(self.i).map(|s| s.as_str())
    }
    fn expect(&mut self, want: &str) {
        let t = self.next();
        assert_eq!(t, want, "rule text: expected {want:?} at token {}", self.i);
    }
    fn stmt(&mut self) -> Node {
        match self.next().as_str() {
            "->" => Node::Leaf(self.next().parse().expect("algorithm number")),
            "if" => {
                self.expect("(");
                let cond = self.cond();
                let then = Box::new(self.body());
                let els = if self.peek() == Some("else") {
                    self.i += 1;
                    Some(Box::new(self.body()))
                } else {
                    None
                };
                Node::If(cond, then, els)
            }
            t => panic!("rule text: unexpected {t:?} at token {}", self.i),
        }
    }
    fn body(&mut self) -> Node {
        if self.peek() == Some("{") {
            self.i += 1;
            let s = self.stmt();
            self.expect("}");
            s
        } else {
            self.stmt()
        }
    }
    /// The tokens up to the `)` closing the `if (`, read as a condition.
    fn cond(&mut self) -> Cond {
        let mut depth = 1;
        let mut inner = Vec::new();
        loop {
            let t = self.next();
            depth += (t == "(") as i32 - (t == ")") as i32;
            if depth == 0 {
                break;
            }
            inner.push(t);
        }
        let inner: Vec<&str> = inner.iter().map(|s| s.as_str()).collect();
        match inner.as_slice() {
            ["!", "ompi_op_is_commute", "(", "op", ")"] => Cond::NotCommute,
            ["communicator_size", "<", n] => Cond::CommLt(n.parse().unwrap()),
            ["communicator_size", "==", n] => Cond::CommEq(n.parse().unwrap()),
            ["total_dsize", "<", n] => Cond::SizeLt(n.parse().unwrap()),
            other => panic!("rule text: unknown condition {other:?}"),
        }
    }
}

/// Every `===` section of a file.
pub fn parse(text: &str) -> Vec<Section> {
    let mut out = Vec::new();
    for sec in text.split("\n=== ").skip(1) {
        let (head, body) = sec.split_once('\n').expect("section header");
        let mut words = head.split_whitespace();
        let coll = words.next().unwrap().to_string();
        assert_eq!(words.next(), Some("algorithms:"), "{head}");
        let algs = words
            .map(|w| {
                let (n, name) = w.split_once('=').expect("n=name");
                (n.parse().unwrap(), name.to_string())
            })
            .collect();
        // One statement per section; anything after it (the source's
        // `int faninout = 2;`) is not part of the decision.
        let mut p = Parser {
            t: tokens(body),
            i: 0,
        };
        let tree = p.stmt();
        out.push(Section { coll, algs, tree });
    }
    out
}

/// The algorithm number the tree gives.
pub fn eval(n: &Node, p: u32, size: u64, commutative: bool) -> u32 {
    match n {
        Node::Leaf(a) => *a,
        Node::If(c, then, els) => {
            let holds = match *c {
                Cond::CommLt(x) => p < x,
                Cond::CommEq(x) => p == x,
                Cond::SizeLt(t) => size < t,
                Cond::NotCommute => !commutative,
            };
            if holds {
                eval(then, p, size, commutative)
            } else {
                let e = els.as_ref().expect("an if without else fell through");
                eval(e, p, size, commutative)
            }
        }
    }
}

/// Every `total_dsize` threshold of a tree.
pub fn thresholds(n: &Node, out: &mut Vec<u64>) {
    if let Node::If(c, a, b) = n {
        if let Cond::SizeLt(t) = c {
            out.push(*t);
        }
        thresholds(a, out);
        if let Some(b) = b {
            thresholds(b, out);
        }
    }
}
