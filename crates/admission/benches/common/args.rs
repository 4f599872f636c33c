//! The command line the benches share: `--bench` runs the benchmark (else it is the smoke test
//! `cargo test`/`nextest` runs), `--list` asks for the tests (the one smoke test), the first
//! number is the size of the run.

pub struct Args(Vec<String>);

impl Args {
    /// The arguments; `None` when only the tests were asked for (`--list`, after naming them).
    pub fn parse() -> Option<Self> {
        let this = Self(std::env::args().collect());
        if this.has("--list") {
            if !this.has("--ignored") {
                println!("smoke: test");
            }
            return None;
        }
        Some(this)
    }

    pub fn has(&self, flag: &str) -> bool {
        self.0.iter().any(|a| a == flag)
    }

    /// Whether the benchmark runs (`cargo bench`), not the smoke test.
    pub fn bench(&self) -> bool {
        self.has("--bench")
    }

    /// The value after `flag`, if it parses.
    pub fn value<T: std::str::FromStr>(&self, flag: &str) -> Option<T> {
        let i = self.0.iter().position(|a| a == flag)?;
        self.0.get(i + 1)?.parse().ok()
    }

    /// The first argument that parses as a number and is not the value of one of `options`;
    /// else `bench` for the benchmark and `smoke` for the smoke test.
    pub fn size<T: std::str::FromStr>(&self, options: &[&str], bench: T, smoke: T) -> T {
        let args = &self.0;
        let mut given = args.iter().enumerate().skip(1).filter(|(i, _)| !options.contains(&args[i - 1].as_str()));
        given.find_map(|(_, a)| a.parse().ok()).unwrap_or(if self.bench() { bench } else { smoke })
    }
}
