//! The scheduler's map definitions read from its BTF, as libbpf reads them
//! (`bpf_object__init_user_btf_maps`): each global in `.maps` is a struct whose members
//! say the map's shape — `__uint(type, N)` is a pointer to an array of N, `__type(value,
//! T)` a pointer to T, `__array(values, struct inner)` an array of pointers to the inner
//! map's definition. The compiler emits the BTF (`-gbtf`) beside the native code, so a map
//! is known by its address, whatever type the C code holds it as (an inner map from an
//! array of maps arrives as a `void *`).
//!
//! Format: the kernel's `Documentation/bpf/btf.rst` (header, type section, string section;
//! type ids from 1, id 0 is `void`).

const BTF_MAGIC: u16 = 0xeb9f;

const KIND_INT: u32 = 1;
const KIND_PTR: u32 = 2;
const KIND_ARRAY: u32 = 3;
const KIND_STRUCT: u32 = 4;
const KIND_UNION: u32 = 5;
const KIND_ENUM: u32 = 6;
const KIND_FWD: u32 = 7;
const KIND_TYPEDEF: u32 = 8;
const KIND_VOLATILE: u32 = 9;
const KIND_CONST: u32 = 10;
const KIND_RESTRICT: u32 = 11;
const KIND_FUNC: u32 = 12;
const KIND_FUNC_PROTO: u32 = 13;
const KIND_VAR: u32 = 14;
const KIND_DATASEC: u32 = 15;
const KIND_FLOAT: u32 = 16;
const KIND_DECL_TAG: u32 = 17;
const KIND_TYPE_TAG: u32 = 18;
const KIND_ENUM64: u32 = 19;

/// One BTF type: its kind, name, `size`/`type` word and kind-specific words.
#[derive(Clone, Debug, Default)]
struct Type {
    kind: u32,
    name: String,
    /// `size` (int, struct, union, enum, float, datasec) or `type` (the others).
    size_type: u32,
    /// Array: (elem type, nelems). Struct/union: (name, type, bit offset) per member.
    array: Option<(u32, u32)>,
    members: Vec<(String, u32, u32)>,
}

/// A parsed `.BTF` section.
pub struct Btf {
    types: Vec<Type>,
}

/// A map's definition.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MapDef {
    /// `BPF_MAP_TYPE_*`.
    pub kind: u32,
    /// `key_size`, bytes (0 when the map has no key).
    pub key_size: u32,
    /// `value_size`, bytes (a pointer's for a map of maps).
    pub value_size: u32,
    /// `max_entries`.
    pub max_entries: u32,
    /// `map_flags`.
    pub map_flags: u32,
    /// A map of maps: the byte offset of its `values` (the inner maps it starts with).
    pub values_offset: Option<u32>,
}

fn u32_at(b: &[u8], at: usize) -> Result<u32, String> {
    b.get(at..at + 4)
        .map(|s| u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
        .ok_or_else(|| "BTF section truncated".to_string())
}

impl Btf {
    /// Parse a `.BTF` section (little-endian, as the native targets write it).
    pub fn parse(b: &[u8]) -> Result<Btf, String> {
        if b.len() < 24 || u16::from_le_bytes([b[0], b[1]]) != BTF_MAGIC {
            return Err("no BTF (not a .BTF section of this byte order)".into());
        }
        let hdr_len = u32_at(b, 4)? as usize;
        let (type_off, type_len) = (u32_at(b, 8)? as usize, u32_at(b, 12)? as usize);
        let (str_off, str_len) = (u32_at(b, 16)? as usize, u32_at(b, 20)? as usize);
        let strs = b
            .get(hdr_len + str_off..hdr_len + str_off + str_len)
            .ok_or("BTF string section out of bounds")?;
        let name = |off: u32| -> String {
            let s = strs.get(off as usize..).unwrap_or_default();
            let end = s.iter().position(|&c| c == 0).unwrap_or(s.len());
            String::from_utf8_lossy(&s[..end]).into_owned()
        };
        let ts = b
            .get(hdr_len + type_off..hdr_len + type_off + type_len)
            .ok_or("BTF type section out of bounds")?;
        let mut types = vec![Type::default()]; // id 0: void
        let mut at = 0;
        while at + 12 <= ts.len() {
            let info = u32_at(ts, at + 4)?;
            let (kind, vlen) = ((info >> 24) & 0x1f, (info & 0xffff) as usize);
            let mut t = Type {
                kind,
                name: name(u32_at(ts, at)?),
                size_type: u32_at(ts, at + 8)?,
                ..Type::default()
            };
            at += 12;
            match kind {
                KIND_INT | KIND_VAR | KIND_DECL_TAG => at += 4,
                KIND_ARRAY => {
                    t.array = Some((u32_at(ts, at)?, u32_at(ts, at + 8)?));
                    at += 12;
                }
                KIND_STRUCT | KIND_UNION => {
                    for _ in 0..vlen {
                        let off = u32_at(ts, at + 8)?;
                        // With kind_flag the offset's low 24 bits are the bit offset.
                        let bits = if info >> 31 != 0 {
                            off & 0xff_ffff
                        } else {
                            off
                        };
                        t.members
                            .push((name(u32_at(ts, at)?), u32_at(ts, at + 4)?, bits));
                        at += 12;
                    }
                }
                KIND_ENUM => at += 8 * vlen,
                KIND_FUNC_PROTO => at += 8 * vlen,
                KIND_DATASEC => at += 12 * vlen,
                KIND_ENUM64 => at += 12 * vlen,
                KIND_PTR | KIND_FWD | KIND_TYPEDEF | KIND_VOLATILE | KIND_CONST | KIND_RESTRICT
                | KIND_FUNC | KIND_FLOAT | KIND_TYPE_TAG => {}
                k => return Err(format!("BTF kind {k} not understood")),
            }
            types.push(t);
        }
        Ok(Btf { types })
    }

    fn get(&self, id: u32) -> Option<&Type> {
        self.types.get(id as usize)
    }

    /// Follow typedefs and qualifiers.
    fn skip_mods(&self, mut id: u32) -> u32 {
        while let Some(t) = self.get(id) {
            match t.kind {
                KIND_TYPEDEF | KIND_VOLATILE | KIND_CONST | KIND_RESTRICT | KIND_TYPE_TAG => {
                    id = t.size_type
                }
                _ => break,
            }
        }
        id
    }

    /// The size of type `id` in bytes (`btf__resolve_size`).
    fn size_of(&self, id: u32) -> Option<u32> {
        let t = self.get(self.skip_mods(id))?;
        match t.kind {
            KIND_INT | KIND_STRUCT | KIND_UNION | KIND_ENUM | KIND_ENUM64 | KIND_FLOAT => {
                Some(t.size_type)
            }
            KIND_PTR => Some(8),
            KIND_ARRAY => {
                let (elem, n) = t.array?;
                Some(self.size_of(elem)? * n)
            }
            _ => None,
        }
    }

    /// `__uint(name, N)`: a pointer to an array of N.
    fn uint_member(&self, ty: u32) -> Option<u32> {
        let p = self.get(self.skip_mods(ty))?;
        if p.kind != KIND_PTR {
            return None;
        }
        let a = self.get(self.skip_mods(p.size_type))?;
        a.array.map(|(_, n)| n)
    }

    /// `__type(name, T)`: a pointer to T, its size.
    fn type_member(&self, ty: u32) -> Option<u32> {
        let p = self.get(self.skip_mods(ty))?;
        if p.kind != KIND_PTR {
            return None;
        }
        self.size_of(p.size_type)
    }

    /// The type of the global variable `name`, if the BTF has it.
    fn var_type(&self, name: &str) -> Option<u32> {
        self.types
            .iter()
            .find(|t| t.kind == KIND_VAR && t.name == name)
            .map(|t| t.size_type)
    }

    /// The definition of the map held in global `name` (a `.maps` variable).
    pub fn map_def(&self, name: &str) -> Result<MapDef, String> {
        let ty = self
            .var_type(name)
            .ok_or_else(|| format!("map '{name}': not in the scheduler's BTF"))?;
        let st = self
            .get(self.skip_mods(ty))
            .filter(|t| t.kind == KIND_STRUCT)
            .ok_or_else(|| format!("map '{name}': its definition is not a struct"))?;
        let mut def = MapDef::default();
        for (m, mty, bits) in &st.members {
            let bad = || format!("map '{name}': member '{m}' is not as libbpf reads it");
            match m.as_str() {
                "type" => def.kind = self.uint_member(*mty).ok_or_else(bad)?,
                "max_entries" => def.max_entries = self.uint_member(*mty).ok_or_else(bad)?,
                "map_flags" => def.map_flags = self.uint_member(*mty).ok_or_else(bad)?,
                "key_size" => def.key_size = self.uint_member(*mty).ok_or_else(bad)?,
                "value_size" => def.value_size = self.uint_member(*mty).ok_or_else(bad)?,
                "key" => def.key_size = self.type_member(*mty).ok_or_else(bad)?,
                "value" => def.value_size = self.type_member(*mty).ok_or_else(bad)?,
                "values" => {
                    def.values_offset = Some(bits / 8);
                    def.value_size = 8;
                }
                // numa_node, pinning, map_extra: nothing the model uses.
                _ => {}
            }
        }
        if def.kind == 0 {
            return Err(format!("map '{name}': no __uint(type, ...)"));
        }
        Ok(def)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A hand-built BTF: int, ptr→array[22] (type), ptr→array[4096] (max_entries),
    /// ptr→int (value), the struct, and a VAR `q0` of it.
    fn sample() -> Vec<u8> {
        let strs = b"\0int\0type\0max_entries\0value\0qmap\0q0\0__u32\0".to_vec();
        let s = |name: &str| -> u32 {
            let needle = format!("\0{name}\0");
            strs.windows(needle.len())
                .position(|w| w == needle.as_bytes())
                .unwrap() as u32
                + 1
        };
        let mut t: Vec<u32> = Vec::new();
        let mut ty = |words: &[u32]| t.extend_from_slice(words);
        ty(&[s("int"), KIND_INT << 24, 4, 32]); // 1 int
        ty(&[0, KIND_ARRAY << 24, 0, 1, 1, 22]); // 2 int[22]
        ty(&[0, KIND_PTR << 24, 2]); // 3
        ty(&[0, KIND_ARRAY << 24, 0, 1, 1, 4096]); // 4 int[4096]
        ty(&[0, KIND_PTR << 24, 4]); // 5
        ty(&[s("__u32"), KIND_TYPEDEF << 24, 1]); // 6
        ty(&[0, KIND_PTR << 24, 6]); // 7
        ty(&[s("qmap"), KIND_STRUCT << 24 | 3, 24]); // 8
        ty(&[s("type"), 3, 0, s("max_entries"), 5, 64, s("value"), 7, 128]);
        ty(&[s("q0"), KIND_VAR << 24, 8, 1]); // 9
        let types: Vec<u8> = t.iter().flat_map(|w| w.to_le_bytes()).collect();
        let mut b = Vec::new();
        b.extend_from_slice(&BTF_MAGIC.to_le_bytes());
        b.extend_from_slice(&[1, 0]);
        for w in [
            24u32,
            0,
            types.len() as u32,
            types.len() as u32,
            strs.len() as u32,
        ] {
            b.extend_from_slice(&w.to_le_bytes());
        }
        b.extend_from_slice(&types);
        b.extend_from_slice(&strs);
        b
    }

    #[test]
    fn a_queue_map_reads_as_libbpf_reads_it() {
        let btf = Btf::parse(&sample()).unwrap();
        let d = btf.map_def("q0").unwrap();
        assert_eq!(
            d,
            MapDef {
                kind: 22,
                key_size: 0,
                value_size: 4,
                max_entries: 4096,
                map_flags: 0,
                values_offset: None,
            }
        );
        assert!(btf
            .map_def("nope")
            .unwrap_err()
            .contains("not in the scheduler's BTF"));
    }

    #[test]
    fn garbage_is_refused() {
        assert!(Btf::parse(b"not btf at all, not at all").is_err());
    }
}
