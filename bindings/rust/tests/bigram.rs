//! The bigram example prints what `tlio bigram generate --temperature 0` prints; models open
//! as one namespace over their shards.
mod support;

use std::process::Command;
use support::*;

fn example() -> std::path::PathBuf {
    // `cargo test` builds the examples next to the test binaries' folder.
    let exe = std::env::current_exe().unwrap();
    exe.parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("examples/bigram")
}

#[test]
fn bigram_example_matches_the_cli() {
    let dir = scratch("bigram");
    let model = dir.join("model");
    run_tlio(&[
        "bigram".as_ref(),
        "train".as_ref(),
        data().join("model_text.txt").as_os_str(),
        model.as_os_str(),
    ]);
    for prompt in ["Shall I", "", "zq", "\u{e9}t\u{e9}"] {
        for tokens in ["0", "1", "57"] {
            let cli = run_tlio(&[
                "bigram".as_ref(),
                "generate".as_ref(),
                model.as_os_str(),
                "--prompt".as_ref(),
                prompt.as_ref(),
                "--tokens".as_ref(),
                tokens.as_ref(),
                "--temperature".as_ref(),
                "0".as_ref(),
            ]);
            let ours = Command::new(example())
                .arg(&model)
                .args(["--prompt", prompt, "--tokens", tokens])
                .output()
                .unwrap();
            assert!(
                ours.status.success(),
                "{}",
                String::from_utf8_lossy(&ours.stderr)
            );
            assert_eq!(
                ours.stdout, cli.stdout,
                "prompt {:?}, {} tokens",
                prompt, tokens
            );
        }
    }
    let m = tlio::Model::open(&model).unwrap();
    assert_eq!(m.arch(), "bigram");
    m.check().unwrap();
    assert_eq!(m.names(), ["bigram.weight"]);
    assert_eq!(m.tensor("bigram.weight").unwrap().shape(), [256, 256]);

    // Errors: not a model directory, and the example's own exit codes.
    let e = tlio::Model::open(&dir).err().unwrap();
    assert_eq!(
        (e.kind(), e.rule()),
        (tlio::ErrorKind::Format, Some("model")),
        "{}",
        e
    );
    let bad = Command::new(example()).arg(&dir).output().unwrap();
    assert_eq!(bad.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("not a model directory"));
    assert_eq!(
        Command::new(example()).output().unwrap().status.code(),
        Some(2)
    );
}

#[test]
fn a_sharded_model_is_one_namespace() {
    let dir = scratch("sharded");
    let src = data().join("quant/tiny_model.safetensors");
    let sharded = dir.join("model");
    run_tlio(&[
        "shard".as_ref(),
        src.as_os_str(),
        sharded.as_os_str(),
        "--max-size".as_ref(),
        "1KB".as_ref(),
    ]);
    std::fs::write(
        sharded.join("config.json"),
        "{\"model_type\": \"gpt2\", \"vocab_size\": 16}\n",
    )
    .unwrap();
    let m = tlio::Model::open(&sharded).unwrap();
    assert_eq!(m.arch(), "gpt2");
    m.check().unwrap(); // an architecture tlio does not check passes
    assert_eq!(m.files().len(), 4);
    let whole = tlio::File::open(&src).unwrap();
    let mut names = m.names();
    names.sort_unstable();
    let mut expected = whole.names();
    expected.sort_unstable();
    assert_eq!(names, expected);
    for name in whole.names() {
        let (a, b) = (m.tensor(name).unwrap(), whole.tensor(name).unwrap());
        assert_eq!(
            (a.dtype(), a.shape(), a.data()),
            (b.dtype(), b.shape(), b.data()),
            "{}",
            name
        );
        assert_eq!(
            m.read_as_f32(name).unwrap(),
            whole.read_as_f32(name).unwrap()
        );
        assert!(m.file_of(name).unwrap().names().contains(&name));
    }
    let e = m.tensor("nope").err().unwrap();
    assert_eq!(e.kind(), tlio::ErrorKind::NotFound);
    assert!(e.to_string().contains("\"nope\""), "{}", e);
    // A model's files are usable while it lives, from several threads.
    std::thread::scope(|s| {
        for f in m.files() {
            s.spawn(move || assert!(!f.names().is_empty()));
        }
    });
    // Every file of a shard set is validated: a corrupt shard fails the open.
    let shard = sharded.join("model-00002-of-00004.safetensors");
    let mut bytes = std::fs::read(&shard).unwrap();
    bytes[0] = bytes[0].wrapping_add(1); // header length no longer matches
    std::fs::write(&shard, bytes).unwrap();
    let e = tlio::Model::open(&sharded).err().unwrap();
    assert_eq!(e.kind(), tlio::ErrorKind::Format, "{}", e);
}
