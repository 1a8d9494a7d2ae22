//! Greedy continuation of a prompt with a bigram tracer model (as `tlio bigram generate DIR
//! --prompt P --tokens N --temperature 0`):
//!
//!     cargo run --example bigram -- DIR [--prompt P] [--tokens N]
//!
//! Each next byte is the argmax of the weight row of the last byte (ties to the lowest byte);
//! without a prompt generation starts after a newline.
use std::io::Write;
use std::process::ExitCode;

const VOCAB: usize = 256;

struct Args {
    dir: String,
    prompt: String,
    tokens: u64,
}

fn usage() -> String {
    "usage: bigram DIR [--prompt P] [--tokens N]".to_string()
}

fn parse_args() -> Result<Args, String> {
    let mut args = std::env::args().skip(1);
    let (mut dir, mut prompt, mut tokens) = (None, String::new(), 100u64);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--prompt" => prompt = args.next().ok_or_else(usage)?,
            "--tokens" => {
                let t = args.next().ok_or_else(usage)?;
                tokens = t
                    .parse()
                    .map_err(|_| format!("--tokens: not a count: {:?}", t))?;
            }
            "-h" | "--help" => return Err(usage()),
            _ if dir.is_none() && !a.starts_with("--") => dir = Some(a),
            _ => return Err(format!("unexpected argument {:?}\n{}", a, usage())),
        }
    }
    Ok(Args {
        dir: dir.ok_or_else(usage)?,
        prompt,
        tokens,
    })
}

fn generate(args: &Args) -> Result<Vec<u8>, String> {
    let model = tlio::Model::open(&args.dir).map_err(|e| e.to_string())?;
    if model.arch() != "bigram" {
        return Err(format!(
            "{} is a {} model, not a bigram model",
            args.dir,
            model.arch()
        ));
    }
    model.check().map_err(|e| e.to_string())?;
    let w = model
        .read_as_f32("bigram.weight")
        .map_err(|e| e.to_string())?;
    if w.len() != VOCAB * VOCAB {
        return Err("bigram generation reads bytes: vocab_size must be 256".to_string());
    }
    let mut last = args.prompt.as_bytes().last().copied().unwrap_or(b'\n') as usize;
    let mut out = Vec::with_capacity(args.tokens as usize);
    for _ in 0..args.tokens {
        let row = &w[last * VOCAB..(last + 1) * VOCAB];
        let mut best = 0;
        for j in 1..VOCAB {
            if row[j] > row[best] {
                best = j;
            }
        }
        out.push(best as u8);
        last = best;
    }
    Ok(out)
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{}", e);
            return ExitCode::from(2);
        }
    };
    match generate(&args) {
        Ok(text) => {
            let mut stdout = std::io::stdout().lock();
            let _ = stdout.write_all(args.prompt.as_bytes());
            let _ = stdout.write_all(&text);
            let _ = stdout.write_all(b"\n");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {}", e);
            ExitCode::from(1)
        }
    }
}
