//! pgbench's expression language (`\set`, `\if`): values, the parser and
//! the evaluator. No I/O; a random draw takes the transaction's own
//! [`Rng`], so a transaction stays a pure function of (seed, index).
//!
//! Precedence, loosest first, as pgbench's grammar: `OR`, `AND`, `NOT`,
//! `IS [NOT] NULL`, comparisons, bit operators (`| # & << >>`), `+ -`,
//! `* / %`, unary `- ~`. Integer arithmetic is checked: an overflow or a
//! division by zero is an error of the transaction, as in pgbench.

use std::collections::HashMap;

use loadrig_engine::rng::Rng;

/// A variable's or an expression's value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Double(f64),
    /// A value set by `-D` or read by `\gset`: a number when it parses.
    Text(String),
}

impl Value {
    /// Text as a number where it reads as one (pgbench's `makeVariableValue`).
    fn number(&self) -> Result<Value, String> {
        match self {
            Value::Text(t) => {
                let t = t.trim();
                if let Ok(i) = t.parse::<i64>() {
                    Ok(Value::Int(i))
                } else if let Ok(d) = t.parse::<f64>() {
                    Ok(Value::Double(d))
                } else {
                    Err(format!("malformed variable value \"{t}\""))
                }
            }
            v => Ok(v.clone()),
        }
    }

    pub fn as_int(&self) -> Result<i64, String> {
        match self.number()? {
            Value::Int(i) => Ok(i),
            Value::Bool(b) => Ok(i64::from(b)),
            Value::Double(d) if d.is_finite() && (-9.2e18..=9.2e18).contains(&d) => Ok(d as i64),
            Value::Double(d) => Err(format!("double to int overflow for {d}")),
            Value::Null => Err("cannot coerce NULL to int".into()),
            Value::Text(_) => Err("not a number".into()),
        }
    }

    pub fn as_double(&self) -> Result<f64, String> {
        match self.number()? {
            Value::Int(i) => Ok(i as f64),
            Value::Double(d) => Ok(d),
            Value::Bool(b) => Ok(f64::from(u8::from(b))),
            Value::Null => Err("cannot coerce NULL to double".into()),
            Value::Text(_) => Err("not a number".into()),
        }
    }

    /// pgbench's truth of a value (`\if`, `AND`, `OR`, `NOT`).
    pub fn truth(&self) -> Result<bool, String> {
        Ok(match self.number()? {
            Value::Null => false,
            Value::Bool(b) => b,
            Value::Int(i) => i != 0,
            Value::Double(d) => d != 0.0,
            Value::Text(_) => return Err("not a boolean".into()),
        })
    }

    /// The text a value is sent as (pgbench's number formats: `%g`-like
    /// doubles are written in full here).
    pub fn text(&self) -> String {
        match self {
            Value::Null => String::new(),
            Value::Bool(b) => b.to_string(),
            Value::Int(i) => i.to_string(),
            Value::Double(d) => format!("{d:?}"),
            Value::Text(t) => t.clone(),
        }
    }
}

/// A binary operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    BitAnd,
    BitOr,
    BitXor,
    Shl,
    Shr,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    And,
    Or,
}

/// The functions taken (pgbench's list but `debug`).
pub const FUNCTIONS: &[(&str, usize, usize)] = &[
    ("abs", 1, 1),
    ("double", 1, 1),
    ("exp", 1, 1),
    ("greatest", 1, usize::MAX),
    ("hash", 1, 2),
    ("hash_fnv1a", 1, 2),
    ("hash_murmur2", 1, 2),
    ("int", 1, 1),
    ("least", 1, usize::MAX),
    ("ln", 1, 1),
    ("mod", 2, 2),
    ("permute", 2, 3),
    ("pi", 0, 0),
    ("pow", 2, 2),
    ("power", 2, 2),
    ("random", 2, 2),
    ("random_exponential", 3, 3),
    ("random_gaussian", 3, 3),
    ("random_zipfian", 3, 3),
    ("sqrt", 1, 1),
];

#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    Lit(Value),
    Var(String),
    Neg(Box<Expr>),
    Not(Box<Expr>),
    BitNot(Box<Expr>),
    IsNull(Box<Expr>, bool),
    Bin(Op, Box<Expr>, Box<Expr>),
    Call(&'static str, Vec<Expr>),
    /// `CASE WHEN c THEN v ... [ELSE e] END`.
    Case(Vec<(Expr, Expr)>, Box<Expr>),
}

/// What an expression reads besides its variables.
pub struct Env<'a> {
    pub vars: &'a HashMap<String, Value>,
    pub rng: &'a mut Rng,
    /// `:default_seed`, the hash functions' seed when none is given.
    pub default_seed: i64,
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Num(Value),
    Var(String),
    Word(String),
    Sym(&'static str),
}

const SYMBOLS: [&str; 20] = [
    "<<", ">>", "<=", ">=", "<>", "!=", "+", "-", "*", "/", "%", "(", ")", ",", "<", ">", "=", "&",
    "|", "#",
];

fn lex(src: &str) -> Result<Vec<Tok>, String> {
    let mut out = Vec::new();
    let b = src.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c.is_ascii_digit() || (c == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_digit))
        {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'.') {
                // an exponent's sign: 1e-3
                if (b[i] == b'e' || b[i] == b'E') && matches!(b.get(i + 1), Some(b'-' | b'+')) {
                    i += 1;
                }
                i += 1;
            }
            let t = &src[start..i];
            let v = match t.parse::<i64>() {
                Ok(n) => Value::Int(n),
                Err(_) => Value::Double(
                    t.parse::<f64>()
                        .map_err(|_| format!("bad number \"{t}\""))?,
                ),
            };
            out.push(Tok::Num(v));
        } else if c == b':' {
            let start = i + 1;
            i += 1;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            if i == start {
                return Err("':' without a variable name".into());
            }
            out.push(Tok::Var(src[start..i].to_string()));
        } else if c.is_ascii_alphabetic() || c == b'_' {
            let start = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push(Tok::Word(src[start..i].to_ascii_lowercase()));
        } else if let Some(s) = SYMBOLS.iter().find(|s| src[i..].starts_with(**s)) {
            out.push(Tok::Sym(s));
            i += s.len();
        } else {
            return Err(format!("unexpected character '{}'", char::from(c)));
        }
    }
    Ok(out)
}

/// Parse an expression.
pub fn parse(src: &str) -> Result<Expr, String> {
    let toks = lex(src)?;
    let mut p = Parser { toks, at: 0 };
    let e = p.or()?;
    match p.toks.get(p.at) {
        None => Ok(e),
        Some(t) => Err(format!("syntax error at {t:?}")),
    }
}

struct Parser {
    toks: Vec<Tok>,
    at: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.at)
    }

    fn eat_sym(&mut self, s: &str) -> bool {
        if matches!(self.peek(), Some(Tok::Sym(x)) if *x == s) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn eat_word(&mut self, w: &str) -> bool {
        if matches!(self.peek(), Some(Tok::Word(x)) if x == w) {
            self.at += 1;
            true
        } else {
            false
        }
    }

    fn or(&mut self) -> Result<Expr, String> {
        let mut l = self.and()?;
        while self.eat_word("or") {
            l = Expr::Bin(Op::Or, Box::new(l), Box::new(self.and()?));
        }
        Ok(l)
    }

    fn and(&mut self) -> Result<Expr, String> {
        let mut l = self.not()?;
        while self.eat_word("and") {
            l = Expr::Bin(Op::And, Box::new(l), Box::new(self.not()?));
        }
        Ok(l)
    }

    fn not(&mut self) -> Result<Expr, String> {
        if self.eat_word("not") {
            return Ok(Expr::Not(Box::new(self.not()?)));
        }
        let e = self.cmp()?;
        if self.eat_word("is") {
            let negated = self.eat_word("not");
            if !self.eat_word("null") {
                return Err("IS must be followed by [NOT] NULL".into());
            }
            return Ok(Expr::IsNull(Box::new(e), negated));
        }
        Ok(e)
    }

    fn cmp(&mut self) -> Result<Expr, String> {
        let l = self.bits()?;
        let op = match self.peek() {
            Some(Tok::Sym("=")) => Op::Eq,
            Some(Tok::Sym("<>" | "!=")) => Op::Ne,
            Some(Tok::Sym("<")) => Op::Lt,
            Some(Tok::Sym("<=")) => Op::Le,
            Some(Tok::Sym(">")) => Op::Gt,
            Some(Tok::Sym(">=")) => Op::Ge,
            _ => return Ok(l),
        };
        self.at += 1;
        Ok(Expr::Bin(op, Box::new(l), Box::new(self.bits()?)))
    }

    fn bits(&mut self) -> Result<Expr, String> {
        let mut l = self.sum()?;
        loop {
            let op = match self.peek() {
                Some(Tok::Sym("&")) => Op::BitAnd,
                Some(Tok::Sym("|")) => Op::BitOr,
                Some(Tok::Sym("#")) => Op::BitXor,
                Some(Tok::Sym("<<")) => Op::Shl,
                Some(Tok::Sym(">>")) => Op::Shr,
                _ => return Ok(l),
            };
            self.at += 1;
            l = Expr::Bin(op, Box::new(l), Box::new(self.sum()?));
        }
    }

    fn sum(&mut self) -> Result<Expr, String> {
        let mut l = self.product()?;
        loop {
            let op = match self.peek() {
                Some(Tok::Sym("+")) => Op::Add,
                Some(Tok::Sym("-")) => Op::Sub,
                _ => return Ok(l),
            };
            self.at += 1;
            l = Expr::Bin(op, Box::new(l), Box::new(self.product()?));
        }
    }

    fn product(&mut self) -> Result<Expr, String> {
        let mut l = self.unary()?;
        loop {
            let op = match self.peek() {
                Some(Tok::Sym("*")) => Op::Mul,
                Some(Tok::Sym("/")) => Op::Div,
                Some(Tok::Sym("%")) => Op::Mod,
                _ => return Ok(l),
            };
            self.at += 1;
            l = Expr::Bin(op, Box::new(l), Box::new(self.unary()?));
        }
    }

    fn unary(&mut self) -> Result<Expr, String> {
        if self.eat_sym("-") {
            return Ok(Expr::Neg(Box::new(self.unary()?)));
        }
        if self.eat_sym("+") {
            return self.unary();
        }
        if matches!(self.peek(), Some(Tok::Word(w)) if w == "~") || self.eat_sym("~") {
            return Ok(Expr::BitNot(Box::new(self.unary()?)));
        }
        self.primary()
    }

    fn primary(&mut self) -> Result<Expr, String> {
        let tok = self.peek().cloned().ok_or("unexpected end of expression")?;
        self.at += 1;
        match tok {
            Tok::Num(v) => Ok(Expr::Lit(v)),
            Tok::Var(v) => Ok(Expr::Var(v)),
            Tok::Sym("(") => {
                let e = self.or()?;
                if !self.eat_sym(")") {
                    return Err("missing ')'".into());
                }
                Ok(e)
            }
            Tok::Word(w) => self.word(&w),
            Tok::Sym(s) => Err(format!("syntax error at '{s}'")),
        }
    }

    fn word(&mut self, w: &str) -> Result<Expr, String> {
        match w {
            "true" => return Ok(Expr::Lit(Value::Bool(true))),
            "false" => return Ok(Expr::Lit(Value::Bool(false))),
            "null" => return Ok(Expr::Lit(Value::Null)),
            "case" => return self.case(),
            _ => {}
        }
        let &(name, min, max) = FUNCTIONS
            .iter()
            .find(|f| f.0 == w)
            .ok_or_else(|| format!("unexpected function name \"{w}\""))?;
        if !self.eat_sym("(") {
            return Err(format!("missing '(' after {name}"));
        }
        let mut args = Vec::new();
        if !self.eat_sym(")") {
            loop {
                args.push(self.or()?);
                if self.eat_sym(")") {
                    break;
                }
                if !self.eat_sym(",") {
                    return Err(format!("missing ',' or ')' in {name}()"));
                }
            }
        }
        if args.len() < min || args.len() > max {
            return Err(format!("wrong number of arguments to {name}()"));
        }
        Ok(Expr::Call(name, args))
    }

    fn case(&mut self) -> Result<Expr, String> {
        let mut arms = Vec::new();
        while self.eat_word("when") {
            let c = self.or()?;
            if !self.eat_word("then") {
                return Err("CASE: missing THEN".into());
            }
            arms.push((c, self.or()?));
        }
        if arms.is_empty() {
            return Err("CASE without WHEN".into());
        }
        let other = if self.eat_word("else") {
            self.or()?
        } else {
            Expr::Lit(Value::Null)
        };
        if !self.eat_word("end") {
            return Err("CASE: missing END".into());
        }
        Ok(Expr::Case(arms, Box::new(other)))
    }
}

impl Expr {
    /// The variables the expression reads, appended to `out`.
    pub fn vars<'a>(&'a self, out: &mut Vec<&'a str>) {
        match self {
            Expr::Lit(_) => {}
            Expr::Var(v) => out.push(v),
            Expr::Neg(e) | Expr::Not(e) | Expr::BitNot(e) | Expr::IsNull(e, _) => e.vars(out),
            Expr::Bin(_, l, r) => {
                l.vars(out);
                r.vars(out);
            }
            Expr::Call(_, args) => args.iter().for_each(|a| a.vars(out)),
            Expr::Case(arms, other) => {
                for (c, v) in arms {
                    c.vars(out);
                    v.vars(out);
                }
                other.vars(out);
            }
        }
    }

    pub fn eval(&self, env: &mut Env<'_>) -> Result<Value, String> {
        match self {
            Expr::Lit(v) => Ok(v.clone()),
            Expr::Var(v) => env
                .vars
                .get(v)
                .cloned()
                .ok_or_else(|| format!("undefined variable \"{v}\""))?
                .number(),
            Expr::Neg(e) => match e.eval(env)?.number()? {
                Value::Double(d) => Ok(Value::Double(-d)),
                v => Ok(Value::Int(
                    v.as_int()?.checked_neg().ok_or("bigint out of range")?,
                )),
            },
            Expr::Not(e) => Ok(Value::Bool(!e.eval(env)?.truth()?)),
            Expr::BitNot(e) => Ok(Value::Int(!e.eval(env)?.as_int()?)),
            Expr::IsNull(e, negated) => Ok(Value::Bool((e.eval(env)? == Value::Null) != *negated)),
            Expr::Bin(op, l, r) => binary(*op, l, r, env),
            Expr::Call(f, args) => {
                let vals = args
                    .iter()
                    .map(|a| a.eval(env))
                    .collect::<Result<Vec<_>, _>>()?;
                super::funcs::call(f, &vals, env)
            }
            Expr::Case(arms, other) => {
                for (c, v) in arms {
                    if c.eval(env)?.truth()? {
                        return v.eval(env);
                    }
                }
                other.eval(env)
            }
        }
    }
}

fn binary(op: Op, l: &Expr, r: &Expr, env: &mut Env<'_>) -> Result<Value, String> {
    // AND and OR look at the right side only when they must.
    match op {
        Op::And => return Ok(Value::Bool(l.eval(env)?.truth()? && r.eval(env)?.truth()?)),
        Op::Or => return Ok(Value::Bool(l.eval(env)?.truth()? || r.eval(env)?.truth()?)),
        _ => {}
    }
    let (a, b) = (l.eval(env)?.number()?, r.eval(env)?.number()?);
    let doubles = matches!(a, Value::Double(_)) || matches!(b, Value::Double(_));
    let range = || "bigint out of range".to_string();
    let int = |f: fn(i64, i64) -> Option<i64>| -> Result<Value, String> {
        Ok(Value::Int(f(a.as_int()?, b.as_int()?).ok_or_else(range)?))
    };
    let cmp = |f: fn(std::cmp::Ordering) -> bool| -> Result<Value, String> {
        let o = if doubles {
            a.as_double()?
                .partial_cmp(&b.as_double()?)
                .ok_or("NaN compared")?
        } else {
            a.as_int()?.cmp(&b.as_int()?)
        };
        Ok(Value::Bool(f(o)))
    };
    match op {
        Op::Add if doubles => Ok(Value::Double(a.as_double()? + b.as_double()?)),
        Op::Sub if doubles => Ok(Value::Double(a.as_double()? - b.as_double()?)),
        Op::Mul if doubles => Ok(Value::Double(a.as_double()? * b.as_double()?)),
        Op::Div if doubles => {
            let d = b.as_double()?;
            if d == 0.0 {
                return Err("division by zero".into());
            }
            Ok(Value::Double(a.as_double()? / d))
        }
        Op::Add => int(i64::checked_add),
        Op::Sub => int(i64::checked_sub),
        Op::Mul => int(i64::checked_mul),
        Op::Div | Op::Mod if b.as_int()? == 0 => Err("division by zero".into()),
        Op::Div => int(i64::checked_div),
        // pgbench: x % -1 is 0, never an overflow.
        Op::Mod => int(|x, y| Some(x.checked_rem(y).unwrap_or(0))),
        Op::BitAnd => int(|x, y| Some(x & y)),
        Op::BitOr => int(|x, y| Some(x | y)),
        Op::BitXor => int(|x, y| Some(x ^ y)),
        Op::Shl => int(|x, y| u32::try_from(y).ok().and_then(|y| x.checked_shl(y))),
        Op::Shr => int(|x, y| u32::try_from(y).ok().and_then(|y| x.checked_shr(y))),
        Op::Eq => cmp(|o| o.is_eq()),
        Op::Ne => cmp(|o| o.is_ne()),
        Op::Lt => cmp(|o| o.is_lt()),
        Op::Le => cmp(|o| o.is_le()),
        Op::Gt => cmp(|o| o.is_gt()),
        Op::Ge => cmp(|o| o.is_ge()),
        Op::And | Op::Or => unreachable!("handled above"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eval(src: &str) -> Result<Value, String> {
        let mut vars = HashMap::new();
        vars.insert("scale".to_string(), Value::Int(10));
        vars.insert("t".to_string(), Value::Text("2.5".into()));
        let mut rng = Rng::for_op(1, 2);
        let mut env = Env {
            vars: &vars,
            rng: &mut rng,
            default_seed: 7,
        };
        parse(src)?.eval(&mut env)
    }

    #[test]
    fn arithmetic_follows_pgbench() {
        assert_eq!(eval("1 + 2 * 3"), Ok(Value::Int(7)));
        assert_eq!(eval("(1 + 2) * 3"), Ok(Value::Int(9)));
        assert_eq!(eval("7 / 2"), Ok(Value::Int(3)));
        assert_eq!(eval("7.0 / 2"), Ok(Value::Double(3.5)));
        assert_eq!(eval("-7 % 3"), Ok(Value::Int(-1)));
        assert_eq!(eval("100000 * :scale"), Ok(Value::Int(1_000_000)));
        assert_eq!(eval(":t * 2"), Ok(Value::Double(5.0)));
        assert_eq!(eval("1 << 4 | 1"), Ok(Value::Int(17)));
        assert_eq!(eval("5 # 1"), Ok(Value::Int(4)));
        assert_eq!(eval("1 < 2 and not 3 = 4"), Ok(Value::Bool(true)));
        assert_eq!(
            eval("case when 1 > 2 then 10 else 20 end"),
            Ok(Value::Int(20))
        );
        assert_eq!(eval("null is null"), Ok(Value::Bool(true)));
        assert_eq!(eval("1e3"), Ok(Value::Double(1000.0)));
    }

    #[test]
    fn errors_are_errors() {
        assert!(eval("1 / 0").unwrap_err().contains("division by zero"));
        assert!(eval("9223372036854775807 + 1")
            .unwrap_err()
            .contains("out of range"));
        assert!(eval(":nope + 1")
            .unwrap_err()
            .contains("undefined variable"));
        assert!(eval("nofunc(1)").unwrap_err().contains("function"));
        assert!(eval("abs(1, 2)")
            .unwrap_err()
            .contains("number of arguments"));
        assert!(eval("(1 + 2").is_err());
        assert!(eval("1 +").is_err());
    }
}
