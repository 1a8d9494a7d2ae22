//! The crate reads every golden as the C++ reader does, and rejects the bad ones by rule.
mod support;

use support::*;

#[test]
fn hf_goldens_read_as_the_cpp_reader_reads_them() {
    let lines = expected("hf");
    let mut files = 0;
    let mut i = 0;
    while i < lines.len() {
        assert_eq!(lines[i][0], "F");
        let path = data().join("hf").join(&lines[i][1]);
        let file = tlio::File::open(&path).unwrap_or_else(|e| panic!("{}: {}", path.display(), e));
        let from_bytes = tlio::File::from_bytes(std::fs::read(&path).unwrap()).unwrap();
        i += 1;
        let (mut names, mut metadata) = (Vec::new(), Vec::new());
        while i < lines.len() && lines[i][0] != "F" {
            let l = &lines[i];
            match l[0].as_str() {
                "T" => {
                    let name = unhex_str(&l[1]);
                    for f in [&file, &from_bytes] {
                        let t = f.tensor(&name).unwrap();
                        assert_eq!(t.name(), name);
                        assert_eq!(t.dtype().name(), l[2], "{} {}", path.display(), name);
                        assert_eq!(t.shape(), shape(&l[3]).as_slice());
                        assert_eq!(
                            t.data_offsets(),
                            (l[4].parse().unwrap(), l[5].parse().unwrap())
                        );
                        assert_eq!(
                            t.data(),
                            unhex(&l[6]).as_slice(),
                            "{} {}",
                            path.display(),
                            name
                        );
                    }
                    names.push(name);
                }
                "M" => metadata.push((unhex_str(&l[1]), unhex_str(&l[2]))),
                _ => {}
            }
            i += 1;
        }
        assert_eq!(
            file.names(),
            names.iter().map(String::as_str).collect::<Vec<_>>(),
            "{}",
            path.display()
        );
        let got: Vec<(String, String)> = file
            .metadata()
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        metadata.sort();
        assert_eq!(got, metadata, "{}", path.display());
        files += 1;
    }
    assert!(files >= 40, "only {} hf goldens", files);
}

#[test]
fn bad_goldens_fail_with_the_manifests_rule() {
    let (mut rejected, mut accepted) = (0, 0);
    for l in expected("bad") {
        let path = data().join("bad").join(&l[1]);
        match (tlio::File::open(&path), l[2].as_str()) {
            (Ok(_), "accept") => accepted += 1,
            (Err(e), "reject") => {
                assert_eq!(e.kind(), tlio::ErrorKind::Format, "{}: {}", l[1], e);
                assert_eq!(e.rule(), Some(l[3].as_str()), "{}: {}", l[1], e);
                assert!(
                    e.to_string().contains(&format!("rule {}", l[3])),
                    "{}: {}",
                    l[1],
                    e
                );
                // The same verdict from memory.
                let e2 = tlio::File::from_bytes(std::fs::read(&path).unwrap())
                    .err()
                    .expect("rejected");
                assert_eq!((e2.kind(), e2.rule()), (e.kind(), e.rule()));
                rejected += 1;
            }
            (r, verdict) => panic!("{}: expected {}, got {:?}", l[1], verdict, r.err()),
        }
    }
    assert!(
        rejected >= 80 && accepted >= 10,
        "{} rejected, {} accepted",
        rejected,
        accepted
    );
}

#[test]
fn error_kinds() {
    let e = tlio::File::open(data().join("no-such-file.safetensors"))
        .err()
        .unwrap();
    assert_eq!(e.kind(), tlio::ErrorKind::Io);
    assert_eq!(e.raw_os_error(), Some(2));
    assert_eq!(e.rule(), None);
    assert!(e.to_string().contains("No such file or directory"), "{}", e);
    assert_eq!(std::io::Error::from(e).kind(), std::io::ErrorKind::NotFound);

    let file = tlio::File::open(data().join("hf/worked_example.safetensors")).unwrap();
    let e = file.tensor("nope").err().unwrap();
    assert_eq!(e.kind(), tlio::ErrorKind::NotFound);
    assert!(e.to_string().contains("\"nope\""), "{}", e);
    assert_eq!(
        file.tensor("a\0b").err().unwrap().kind(),
        tlio::ErrorKind::NotFound
    );
    assert_eq!(
        tlio::File::open("a\0b").err().unwrap().kind(),
        tlio::ErrorKind::InvalidArgument
    );
    assert_eq!(
        file.dequantize("w").err().unwrap().kind(),
        tlio::ErrorKind::NotFound
    );

    let e = tlio::File::from_bytes(b"# a Markdown file\n\nnot weights".to_vec())
        .err()
        .unwrap();
    assert_eq!((e.kind(), e.rule()), (tlio::ErrorKind::Format, Some("1")));
    let std_error: &dyn std::error::Error = &e;
    assert_eq!(std_error.to_string(), e.message());
}

#[test]
fn worked_example() {
    let file = tlio::File::open(data().join("hf/worked_example.safetensors")).unwrap();
    assert_eq!(file.names(), ["w"]);
    let w = file.tensor("w").unwrap();
    assert_eq!(
        (w.dtype(), w.shape(), w.numel()),
        (tlio::Dtype::F32, &[2u64, 2][..], 4)
    );
    assert_eq!(file.read_as_f32("w").unwrap(), [1.0, 2.0, 3.0, 4.0]);
    assert_eq!(file.metadata().get("format"), Some(&"tinyllm"));
    assert!(file.quantized().unwrap().is_empty());
}

#[test]
fn dtypes() {
    assert_eq!(tlio::Dtype::all().len(), 22);
    // The enum's order is the C API's: each variant's name is what libtlio calls its value.
    for &d in tlio::Dtype::all() {
        assert_eq!(format!("{:?}", d), d.name());
    }
    for &d in tlio::Dtype::all() {
        assert_eq!(tlio::Dtype::from_name(d.name()).unwrap(), d);
        assert_eq!(d.to_string().parse::<tlio::Dtype>().unwrap(), d);
    }
    assert_eq!(
        tlio::Dtype::from_name("bfloat16").unwrap(),
        tlio::Dtype::BF16
    );
    assert_eq!((tlio::Dtype::F4.bits(), tlio::Dtype::C64.bits()), (4, 64));
    assert_eq!(
        tlio::Dtype::from_name("float128").err().unwrap().kind(),
        tlio::ErrorKind::InvalidArgument
    );
    // Every dtype golden opens, with its dtype.
    for &d in tlio::Dtype::all() {
        let path = data().join(format!("hf/dtype_{}.safetensors", d.name()));
        if path.exists() {
            let f = tlio::File::open(&path).unwrap();
            assert!(
                f.tensors().iter().all(|t| t.dtype() == d),
                "{}",
                path.display()
            );
        }
    }
}

#[test]
fn threads_share_a_file() {
    let file = tlio::File::open(data().join("hf/worked_example.safetensors")).unwrap();
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                for _ in 0..200 {
                    assert_eq!(file.read_as_f32("w").unwrap()[3], 4.0);
                }
            });
        }
    });
}

#[test]
fn direct_reads_give_the_files_bytes_without_a_mapping() {
    let path = data().join("hf/worked_example.safetensors");
    let options = tlio::OpenOptions {
        direct: true,
        ..tlio::OpenOptions::default()
    };
    let file = tlio::File::open_with(&path, &options).unwrap();
    assert!(!file.tensor("w").unwrap().is_mapped());
    assert_eq!(
        file.read("w").unwrap(),
        tlio::File::open(&path).unwrap().read("w").unwrap()
    );
    assert_eq!(file.read_as_f32("w").unwrap(), vec![1.0, 2.0, 3.0, 4.0]);
    let both = tlio::OpenOptions {
        private: true,
        ..options
    };
    let e = tlio::File::open_with(&path, &both)
        .err()
        .expect("private and direct exclude each other");
    assert_eq!(e.kind(), tlio::ErrorKind::InvalidArgument);
}

#[test]
fn private_mapping_is_writable_and_leaves_the_file_alone() {
    let path = data().join("hf/worked_example.safetensors");
    let mut file = tlio::File::open_private(&path).unwrap();
    file.tensor_data_mut("w").unwrap()[..4].copy_from_slice(&42f32.to_le_bytes());
    assert_eq!(file.read_as_f32("w").unwrap(), vec![42.0, 2.0, 3.0, 4.0]);
    let reread = tlio::File::open(&path).unwrap();
    assert_eq!(reread.read_as_f32("w").unwrap(), vec![1.0, 2.0, 3.0, 4.0]);

    let mut shared = tlio::File::open(&path).unwrap();
    let e = shared.tensor_data_mut("w").unwrap_err();
    assert_eq!(e.kind(), tlio::ErrorKind::InvalidArgument);
    let mut file = tlio::File::open_private(&path).unwrap();
    assert_eq!(
        file.tensor_data_mut("x").unwrap_err().kind(),
        tlio::ErrorKind::NotFound
    );
}

#[test]
fn read_many_fills_every_target() {
    let path = data().join("hf/mixed_all_dtypes.safetensors");
    let file = tlio::File::open(&path).unwrap();
    let names = file.names();
    let mut buffers: Vec<Vec<u8>> = names
        .iter()
        .map(|n| vec![0xAA; file.tensor(n).unwrap().data().len()])
        .collect();
    let mut targets: Vec<(&str, &mut [u8])> = names
        .iter()
        .copied()
        .zip(buffers.iter_mut().map(|b| b.as_mut_slice()))
        .collect();
    file.read_many(&mut targets).unwrap();
    for (name, buffer) in names.iter().zip(&buffers) {
        assert_eq!(
            buffer.as_slice(),
            file.tensor(name).unwrap().data(),
            "{}",
            name
        );
    }
    let mut short = [0u8; 1];
    let e = file
        .read_many(&mut [(names[0], &mut short[..])])
        .unwrap_err();
    assert_eq!(e.kind(), tlio::ErrorKind::InvalidArgument);
    let e = file
        .read_many(&mut [("no such tensor", &mut short[..])])
        .unwrap_err();
    assert_eq!(e.kind(), tlio::ErrorKind::NotFound);
}
