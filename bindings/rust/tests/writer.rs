//! The writer's bytes equal the canonical writer's: Hugging Face's goldens and `tlio convert`.
mod support;

use support::*;

#[test]
fn writes_as_the_canonical_writer_and_hf() {
    let dir = scratch("writer");
    let lines = expected("hf");
    let (mut written, mut same_as_hf) = (0, 0);
    let mut i = 0;
    while i < lines.len() {
        let golden = data().join("hf").join(&lines[i][1]);
        let out = dir.join(&lines[i][1]);
        i += 1;
        // The C API takes NUL-terminated names: a name holding a NUL byte cannot be written
        // through it (the writer says so; reading such names works).
        let end = (i..lines.len())
            .find(|&j| lines[j][0] == "F")
            .unwrap_or(lines.len());
        if lines[i..end]
            .iter()
            .any(|l| l[0] == "W" && unhex(&l[1]).contains(&0))
        {
            let mut w = tlio::Writer::create(&out).unwrap();
            let e = w.declare("\0nul", tlio::Dtype::F32, &[1]).err().unwrap();
            assert_eq!(e.kind(), tlio::ErrorKind::InvalidArgument);
            i = end;
            continue;
        }
        let mut w = tlio::Writer::create(&out).unwrap();
        let mut pending = Vec::new();
        while i < lines.len() && lines[i][0] != "F" {
            let l = &lines[i];
            match l[0].as_str() {
                "WM" => w.metadata(&unhex_str(&l[1]), &unhex_str(&l[2])).unwrap(),
                "W" => {
                    let name = unhex_str(&l[1]);
                    w.declare(&name, tlio::Dtype::from_name(&l[2]).unwrap(), &shape(&l[3]))
                        .unwrap();
                    pending.push((name, unhex(&l[4])));
                }
                _ => {}
            }
            i += 1;
        }
        assert!(!out.exists(), "nothing appears before commit");
        for (name, bytes) in &pending {
            // Half with write, half with two appends.
            if bytes.len() >= 2 && name.len() % 2 == 0 {
                w.append(name, &bytes[..bytes.len() / 2]).unwrap();
                w.append(name, &bytes[bytes.len() / 2..]).unwrap();
            } else {
                w.write(name, bytes).unwrap();
            }
        }
        w.commit().unwrap();
        let ours = std::fs::read(&out).unwrap();
        // The C++ canonical writer, rewriting the golden.
        let cpp = dir.join("cpp.safetensors");
        run_tlio(&["convert".as_ref(), golden.as_os_str(), cpp.as_os_str()]);
        assert_eq!(ours, std::fs::read(&cpp).unwrap(), "{}", golden.display());
        // Hugging Face's bytes too, but for the documented exceptions (docs/format.md, "Writing"): an empty
        // metadata map is omitted, and several metadata keys are sorted (HF's order is random).
        if ours == std::fs::read(&golden).unwrap() {
            same_as_hf += 1;
        }
        written += 1;
    }
    assert!(
        same_as_hf + 3 >= written,
        "{} of {} equal to HF's bytes",
        same_as_hf,
        written
    );
    assert!(written >= 40);
}

#[test]
fn a_writer_dropped_or_failing_leaves_no_file() {
    let dir = scratch("writer_abort");
    let out = dir.join("x.safetensors");
    {
        let mut w = tlio::Writer::create(&out).unwrap();
        w.declare("a", tlio::Dtype::F32, &[2]).unwrap();
        w.write("a", &[0u8; 8]).unwrap();
    } // dropped: aborted
    assert!(!out.exists());
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        0,
        "no temporary left behind"
    );

    let mut w = tlio::Writer::create(&out).unwrap();
    w.declare("a", tlio::Dtype::F32, &[2]).unwrap();
    let e = w.write("a", &[0u8; 7]).err().unwrap();
    assert_eq!(e.kind(), tlio::ErrorKind::InvalidArgument, "{}", e);
    let e = w.declare("a", tlio::Dtype::F32, &[1]).err().unwrap();
    assert_eq!(e.kind(), tlio::ErrorKind::InvalidArgument, "{}", e);
    let e = w.commit().err().unwrap(); // "a" never written
    assert!(e.to_string().contains("\"a\""), "{}", e);
    assert!(!out.exists());

    let e = tlio::Writer::create(dir.join("no/such/dir/x.safetensors"))
        .and_then(|w| w.commit())
        .err()
        .unwrap();
    assert_eq!(e.kind(), tlio::ErrorKind::Io, "{}", e);
}
