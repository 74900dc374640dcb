//! The fuzz input: bytes read front to back ([`Input`]), their encoder for
//! the seeds ([`Enc`]), and the payload pattern both sides use.

/// The fuzz bytes, read front to back; past the end every read is zero,
/// so that every input, however short, is a whole run.
pub(crate) struct Input<'a> {
    d: &'a [u8],
}

impl<'a> Input<'a> {
    pub(crate) fn new(d: &'a [u8]) -> Self {
        Input { d }
    }
    pub(crate) fn is_empty(&self) -> bool {
        self.d.is_empty()
    }
    pub(crate) fn u8(&mut self) -> u8 {
        match self.d.split_first() {
            Some((&b, rest)) => {
                self.d = rest;
                b
            }
            None => 0,
        }
    }
    pub(crate) fn u16(&mut self) -> u16 {
        u16::from_be_bytes([self.u8(), self.u8()])
    }
    pub(crate) fn i16(&mut self) -> i16 {
        self.u16() as i16
    }
    pub(crate) fn u32(&mut self) -> u32 {
        u32::from_be_bytes([self.u8(), self.u8(), self.u8(), self.u8()])
    }
    pub(crate) fn bytes(&mut self, n: usize) -> &'a [u8] {
        let n = n.min(self.d.len());
        let (a, b) = self.d.split_at(n);
        self.d = b;
        a
    }
}

/// The seed encoder: the inverse of [`Input`].
#[derive(Default)]
pub(crate) struct Enc(pub(crate) Vec<u8>);

impl Enc {
    pub(crate) fn u8(&mut self, b: u8) -> &mut Self {
        self.0.push(b);
        self
    }
    pub(crate) fn u16(&mut self, v: u16) -> &mut Self {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }
    pub(crate) fn u32(&mut self, v: u32) -> &mut Self {
        self.0.extend_from_slice(&v.to_be_bytes());
        self
    }
    pub(crate) fn bytes(&mut self, b: &[u8]) -> &mut Self {
        self.0.extend_from_slice(b);
        self
    }
}

/// `n` octets of a pattern that differs with `salt`: payloads whose
/// misplaced octets a check would see.
pub(crate) fn pattern(n: usize, salt: u8) -> Vec<u8> {
    (0..n)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(salt))
        .collect()
}
