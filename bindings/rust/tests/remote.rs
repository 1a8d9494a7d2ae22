//! Files and model directories over HTTP: Debian's nginx started on 127.0.0.1 with a generated
//! config, serving the repository's test data.
mod support;

use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command};
use std::time::Duration;

use tlio::{ErrorKind, File, Model, OpenOptions};

struct Nginx {
    child: Child,
    url: String,
    log: PathBuf,
}

impl Drop for Nginx {
    fn drop(&mut self) {
        // SIGTERM: the master stops its workers too (SIGKILL would leave them running).
        unsafe { kill(self.child.id() as i32, 15) };
        let _ = self.child.wait();
    }
}

fn nginx(name: &str) -> Nginx {
    let dir = support::scratch(name);
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    std::fs::create_dir_all(dir.join("logs")).unwrap();
    let log = dir.join("access.log");
    let d = dir.display();
    // As root, nginx's workers would switch to nobody, who may not read the build tree.
    let user = if unsafe { libc_geteuid() } == 0 {
        "user root;"
    } else {
        ""
    };
    let conf = format!(
        "{user}\nworker_processes 1;\nerror_log {d}/error.log;\npid {d}/nginx.pid;\n\
         events {{ worker_connections 16; }}\n\
         http {{ log_format ranges '$status $body_bytes_sent $http_range $http_authorization';\n\
         access_log {log} ranges; client_body_temp_path {d}; proxy_temp_path {d};\n\
         fastcgi_temp_path {d}; uwsgi_temp_path {d}; scgi_temp_path {d};\n\
         server {{ listen 127.0.0.1:{port}; root {root}; }} }}\n",
        log = log.display(),
        root = support::data().canonicalize().unwrap().display(),
    );
    std::fs::write(dir.join("nginx.conf"), conf).unwrap();
    let child = Command::new("/usr/sbin/nginx")
        .args(["-p", &d.to_string(), "-c", &format!("{d}/nginx.conf")])
        .args(["-e", &format!("{d}/error.log"), "-g", "daemon off;"])
        .spawn()
        .expect("nginx (Debian's nginx-light: scripts/install-deps.sh)");
    for _ in 0..200 {
        if TcpStream::connect(("127.0.0.1", port)).is_ok() {
            break;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    Nginx {
        child,
        url: format!("http://127.0.0.1:{port}"),
        log,
    }
}

extern "C" {
    #[link_name = "geteuid"]
    fn libc_geteuid() -> u32;
    fn kill(pid: i32, signal: i32) -> i32;
}

#[test]
fn a_remote_file_reads_as_the_local_one() {
    let server = nginx("remote_file");
    let local = File::open(support::data().join("hf/mixed_all_dtypes.safetensors")).unwrap();
    let remote = File::open(format!("{}/hf/mixed_all_dtypes.safetensors", server.url)).unwrap();
    assert_eq!(remote.names(), local.names());
    assert_eq!(remote.metadata(), local.metadata());
    for name in local.names() {
        let (r, l) = (remote.tensor(name).unwrap(), local.tensor(name).unwrap());
        assert_eq!((r.dtype(), r.shape()), (l.dtype(), l.shape()));
        assert_eq!(r.is_mapped(), l.data().is_empty()); // only empty tensors need no bytes
        assert_eq!(remote.read(name).unwrap(), l.data(), "{name}");
    }
    let mut bufs: Vec<Vec<u8>> = local
        .tensors()
        .iter()
        .map(|t| vec![0; t.data().len()])
        .collect();
    let names = local.names();
    let mut targets: Vec<(&str, &mut [u8])> = names
        .iter()
        .copied()
        .zip(bufs.iter_mut().map(|b| b.as_mut_slice()))
        .collect();
    remote.read_many(&mut targets).unwrap();
    for (name, buf) in names.iter().zip(&bufs) {
        assert_eq!(buf.as_slice(), local.tensor(name).unwrap().data());
    }
}

#[test]
fn tokens_go_with_the_requests_and_errors_have_kinds() {
    let server = nginx("remote_token");
    let options = OpenOptions {
        token: Some("rust-token".into()),
        ..OpenOptions::default()
    };
    let url = format!("{}/hf/worked_example.safetensors", server.url);
    File::open_with(&url, &options).unwrap();
    std::thread::sleep(Duration::from_millis(100)); // nginx logs after answering
    let log = std::fs::read_to_string(&server.log).unwrap();
    assert!(log.contains("Bearer rust-token"), "{log}");
    let e = File::open(format!("{}/hf/nope.safetensors", server.url))
        .err()
        .expect("a 404 is an error");
    assert_eq!(e.kind(), ErrorKind::Io);
    assert_eq!(std::io::Error::from(e).kind(), std::io::ErrorKind::NotFound);
}

#[test]
fn model_directories_by_url() {
    let server = nginx("remote_model");
    for model in ["bigram", "sharded"] {
        let local = Model::open(support::data().join("models").join(model)).unwrap();
        let remote = Model::open(format!("{}/models/{}/", server.url, model)).unwrap();
        assert_eq!(remote.arch(), local.arch());
        assert_eq!(remote.files().len(), local.files().len());
        assert_eq!(remote.names(), local.names());
        remote.check().unwrap();
    }
}

#[test]
fn hub_files_from_the_local_cache() {
    // hf:// goes through the C API as any location: here to a cache folder made by the test,
    // offline (no request could be made).
    let dir = support::scratch("hub_cache");
    let commit = "b".repeat(40);
    let repo = dir.join("hub").join("models--org--name");
    let snapshot = repo.join("snapshots").join(&commit);
    std::fs::create_dir_all(repo.join("refs")).unwrap();
    std::fs::create_dir_all(&snapshot).unwrap();
    std::fs::write(repo.join("refs").join("main"), &commit).unwrap();
    let source = support::data().join("hf/mixed_all_dtypes.safetensors");
    std::fs::copy(&source, snapshot.join("model.safetensors")).unwrap();
    std::env::set_var("HF_HUB_CACHE", dir.join("hub"));
    std::env::set_var("HF_HUB_OFFLINE", "1");
    let cached = File::open("hf://org/name/model.safetensors").unwrap();
    let local = File::open(&source).unwrap();
    assert_eq!(cached.names(), local.names());
    for name in local.names() {
        assert_eq!(
            cached.read(name).unwrap(),
            local.tensor(name).unwrap().data()
        );
    }
    let e = File::open("hf://org/name/missing.safetensors")
        .err()
        .expect("offline and not cached");
    assert_eq!(std::io::Error::from(e).kind(), std::io::ErrorKind::NotFound);
}

#[test]
fn outputs_go_to_object_stores() {
    // An s3:// output is built locally and uploaded on commit: here to an endpoint where
    // nothing listens, so the commit fails with the connection's error and nothing is left.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    std::env::set_var("AWS_ENDPOINT_URL", format!("http://127.0.0.1:{port}"));
    std::env::set_var("AWS_NO_SIGN_REQUEST", "true");
    let mut w = tlio::Writer::create("s3://bucket/out.safetensors").unwrap();
    w.declare("x", tlio::Dtype::U8, &[2]).unwrap();
    w.write("x", &[1, 2]).unwrap();
    let e = w.commit().err().expect("nothing listens there");
    assert_eq!(
        std::io::Error::from(e).kind(),
        std::io::ErrorKind::ConnectionRefused
    );
    let e = tlio::Writer::create("http://127.0.0.1:1/out.safetensors")
        .err()
        .expect("http:// takes no writes");
    assert_eq!(e.kind(), ErrorKind::Unsupported);
}
