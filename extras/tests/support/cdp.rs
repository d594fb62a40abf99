//! A headless Chromium driven over the DevTools protocol: the browser
//! started on a temporary profile in a process group of its own (killed,
//! group and all, when dropped), and a small WebSocket client for one page.
//! Blocking I/O on the test's own thread; nothing here is async.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// Where Chromium is: `BULKHEAD_CHROMIUM`, else the first of the usual
/// names found on `PATH` (the Debian package installs `/usr/bin/chromium`).
pub(crate) fn find_chromium() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("BULKHEAD_CHROMIUM") {
        return Some(PathBuf::from(path));
    }
    let path = std::env::var_os("PATH")?;
    [
        "chromium",
        "chromium-browser",
        "google-chrome",
        "google-chrome-stable",
    ]
    .iter()
    .flat_map(|name| std::env::split_paths(&path).map(move |dir| dir.join(name)))
    .find(|candidate| candidate.is_file())
}

/// A running headless Chromium.
pub(crate) struct Browser {
    child: Child,
    profile: PathBuf,
    /// `127.0.0.1:<port>` of its DevTools endpoint.
    pub(crate) devtools: String,
}

impl Browser {
    /// Starts `chromium` on `url` and waits until its DevTools endpoint
    /// listens.
    pub(crate) fn launch(chromium: &Path, url: &str) -> Browser {
        static LAUNCHES: AtomicU64 = AtomicU64::new(0);
        let profile = std::env::temp_dir().join(format!(
            "bulkhead-chromium-{}-{}",
            std::process::id(),
            LAUNCHES.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&profile).expect("a temporary profile directory");
        let mut child = Command::new(chromium)
            .args([
                "--headless=new",
                // Root in a container has no user namespaces to sandbox in.
                "--no-sandbox",
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-extensions",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--hide-scrollbars",
                "--mute-audio",
                "--remote-debugging-address=127.0.0.1",
                "--remote-debugging-port=0",
                "--window-size=1280,900",
            ])
            .arg(format!("--user-data-dir={}", profile.display()))
            .arg(url)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            // Its own group: the renderer and helper processes die with it.
            .process_group(0)
            .spawn()
            .unwrap_or_else(|error| panic!("cannot start {}: {error}", chromium.display()));
        // "DevTools listening on ws://127.0.0.1:PORT/devtools/browser/ID" on
        // stderr; the rest of stderr is drained (and kept for a failure's
        // message) so that Chromium never blocks on a full pipe.
        let stderr = child.stderr.take().expect("a piped stderr");
        let (found, endpoint) = mpsc::channel();
        std::thread::spawn(move || {
            let mut found = Some(found);
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(rest) = line.strip_prefix("DevTools listening on ws://") {
                    if let Some(found) = found.take() {
                        let _ = found.send(Ok(rest.split('/').next().unwrap_or("").to_owned()));
                    }
                } else if let Some(found) = &found {
                    let _ = found.send(Err(line));
                }
            }
        });
        let mut browser = Browser {
            child,
            profile,
            devtools: String::new(),
        };
        let give_up = Instant::now() + Duration::from_secs(60);
        let mut said = Vec::new();
        loop {
            match endpoint.recv_timeout(Duration::from_millis(200)) {
                Ok(Ok(devtools)) => {
                    browser.devtools = devtools;
                    return browser;
                }
                Ok(Err(line)) => said.push(line),
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    panic!("chromium exited before it listened: {}", said.join("\n"))
                }
            }
            if let Ok(Some(status)) = browser.child.try_wait() {
                panic!("chromium exited ({status}): {}", said.join("\n"));
            }
            assert!(
                Instant::now() < give_up,
                "chromium did not listen within 60 s: {}",
                said.join("\n")
            );
        }
    }

    /// The page the browser opened with, as a DevTools client.
    pub(crate) fn page(&self) -> Page {
        let give_up = Instant::now() + Duration::from_secs(30);
        loop {
            let targets = http_get(&self.devtools, "/json/list");
            let targets: Value = serde_json::from_str(&targets).unwrap_or(Value::Null);
            let page = targets.as_array().and_then(|targets| {
                targets
                    .iter()
                    .find(|target| target["type"] == "page")
                    .and_then(|target| target["webSocketDebuggerUrl"].as_str())
            });
            if let Some(url) = page {
                return Page::connect(url);
            }
            assert!(Instant::now() < give_up, "no page target: {targets}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // The whole group, by its id (the browser's pid): SIGKILL, as a
        // headless browser has nothing to save.
        let group = format!("-{}", self.child.id());
        let _ = Command::new("kill").args(["-KILL", "--", &group]).status();
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.profile);
    }
}

/// A GET on Chromium's DevTools HTTP endpoint.
fn http_get(host: &str, path: &str) -> String {
    let mut stream = TcpStream::connect(host).expect("the DevTools endpoint");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("a read timeout");
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .expect("a request");
    // DevTools keeps the connection open: the body is `Content-Length` long.
    let mut reader = BufReader::new(stream);
    let mut length = 0;
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).expect("a header line");
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().expect("a length");
        }
    }
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body).expect("the body");
    String::from_utf8(body).expect("UTF-8")
}

/// One page, over its DevTools WebSocket.
pub(crate) struct Page {
    stream: TcpStream,
    next_id: u64,
    /// The events received while waiting for replies, oldest first (a
    /// domain sends them once enabled, such as `Network.enable`).
    events: Vec<Value>,
}

impl Page {
    fn connect(url: &str) -> Page {
        let rest = url.strip_prefix("ws://").expect("a ws:// URL");
        let (host, path) = rest.split_at(rest.find('/').expect("a path"));
        let mut stream = TcpStream::connect(host).expect("the page's WebSocket");
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .expect("a read timeout");
        // The key is fixed: its only use is to prove the server speaks
        // WebSocket, which the 101 shows.
        write!(
            stream,
            "GET {path} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
             Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        )
        .expect("the handshake");
        let mut head = Vec::new();
        let mut byte = [0u8];
        while !head.ends_with(b"\r\n\r\n") {
            stream
                .read_exact(&mut byte)
                .expect("the handshake's answer");
            head.push(byte[0]);
        }
        let head = String::from_utf8_lossy(&head);
        assert!(head.starts_with("HTTP/1.1 101"), "no WebSocket: {head}");
        Page {
            stream,
            next_id: 0,
            events: Vec::new(),
        }
    }

    /// Sends a command and returns its `result` (events in between are
    /// kept, for [`take_events`](Self::take_events)).
    pub(crate) fn call(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        let message = json!({"id": id, "method": method, "params": params}).to_string();
        self.send(message.as_bytes());
        loop {
            let reply: Value = serde_json::from_slice(&self.receive()).expect("a JSON message");
            if reply["id"] == id {
                if let Some(error) = reply.get("error") {
                    panic!("{method} failed: {error}");
                }
                return reply["result"].clone();
            }
            if reply.get("method").is_some() {
                self.events.push(reply);
            }
        }
    }

    /// The events named `method` received so far (`{"method", "params"}`
    /// each), taken out of those kept; the others stay.
    pub(crate) fn take_events(&mut self, method: &str) -> Vec<Value> {
        let (taken, kept) = std::mem::take(&mut self.events)
            .into_iter()
            .partition(|event| event["method"] == method);
        self.events = kept;
        taken
    }

    /// Evaluates `expression` in the page and returns its value.
    pub(crate) fn eval(&mut self, expression: &str) -> Value {
        let result = self.call(
            "Runtime.evaluate",
            json!({"expression": expression, "returnByValue": true}),
        );
        if let Some(exception) = result.get("exceptionDetails") {
            panic!("{expression} threw: {exception}");
        }
        result["result"]["value"].clone()
    }

    /// One masked text frame (a client's frames must be masked).
    fn send(&mut self, payload: &[u8]) {
        let mask = [0x5a, 0x13, 0xc7, 0x2e];
        let mut frame = vec![0x81];
        match payload.len() {
            len @ 0..=125 => frame.push(0x80 | len as u8),
            len @ 126..=0xffff => {
                frame.push(0x80 | 126);
                frame.extend_from_slice(&(len as u16).to_be_bytes());
            }
            len => {
                frame.push(0x80 | 127);
                frame.extend_from_slice(&(len as u64).to_be_bytes());
            }
        }
        frame.extend_from_slice(&mask);
        frame.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
        self.stream.write_all(&frame).expect("a frame sent");
    }

    /// One message: its frames' payloads joined (a server's frames are not
    /// masked); pings answered, a close is a failure.
    fn receive(&mut self) -> Vec<u8> {
        let mut message = Vec::new();
        loop {
            let mut head = [0u8; 2];
            self.stream.read_exact(&mut head).expect("a frame");
            let (fin, opcode) = (head[0] & 0x80 != 0, head[0] & 0x0f);
            let len = match head[1] & 0x7f {
                126 => {
                    let mut len = [0u8; 2];
                    self.stream.read_exact(&mut len).expect("a length");
                    u64::from(u16::from_be_bytes(len))
                }
                127 => {
                    let mut len = [0u8; 8];
                    self.stream.read_exact(&mut len).expect("a length");
                    u64::from_be_bytes(len)
                }
                len => u64::from(len),
            };
            let mut payload = vec![0u8; usize::try_from(len).expect("a frame that fits")];
            self.stream.read_exact(&mut payload).expect("a payload");
            match opcode {
                0x8 => panic!("DevTools closed the WebSocket"),
                0x9 => {
                    let mut pong = vec![0x8a, 0x80 | payload.len() as u8, 0, 0, 0, 0];
                    pong.extend_from_slice(&payload);
                    self.stream.write_all(&pong).expect("a pong");
                    continue;
                }
                0xa => continue,
                _ => message.extend_from_slice(&payload),
            }
            if fin {
                return message;
            }
        }
    }
}
