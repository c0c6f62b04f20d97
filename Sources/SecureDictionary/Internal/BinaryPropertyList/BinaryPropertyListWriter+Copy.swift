/// Copying a stored blob's objects into the output in the writer's form, with no Swift value
/// of any string or data: bytes go from region to region. This writer's blobs are copied byte
/// for byte but for the (renumbered) references; another program's (shared objects, wider
/// integers, ASCII as UTF-16, unsorted keys) come out as this writer would have written their
/// values. The blob was validated at load: the checks here only keep each read inside it.
extension BinaryPropertyListWriter {
    /// Copies object `object` of `view` (with all it contains) as object `index`.
    mutating func copy(_ object: Int, of view: BlobView, index: Int) throws(SecureDictionaryError) {
        markObject(index)
        let offset = try view.objectOffset(object)
        let marker = view.byte(at: offset)
        switch marker & 0xF0 {
        case 0xA0, 0xD0:
            let container = try view.container(object, ordered: true)
            let first = startContainer(marker & 0xF0, count: container.count, index: index)
            // A dictionary's keys in the writer's order, then its values in the same order.
            let values = container.isDictionary ? container.count : 0
            for position in 0..<values {
                let key = try view.string(view.keyObject(container.entry(inOrder: position), of: container))
                copyString(key, index: first + position)
            }
            for position in 0..<container.count {
                let stored = try view.valueObject(container.entry(inOrder: position), of: container)
                try copy(stored, of: view, index: first + values + position)
            }
        case 0x40:
            let (count, start) = try view.countAndStart(marker: marker, offset: offset, unitSize: 1)
            appendHeader(0x40, count: count)
            append(contentsOf: UnsafeRawBufferPointer(start: view.base + start, count: count))
        case 0x50, 0x60:
            try copyString(view.string(marker: marker, offset: offset)!, index: index)
        default:
            write(try view.scalar(marker: marker, offset: offset), index: index)
        }
    }

    /// Copies a string object as object `index`: ASCII when every scalar is below 0x80.
    mutating func copyString(_ string: StoredString, index: Int) {
        markObject(index)
        if !string.isUTF16 {
            appendHeader(0x50, count: string.count)
            append(contentsOf: UnsafeRawBufferPointer(start: string.start, count: string.count))
        } else if string.isASCII {
            appendHeader(0x50, count: string.count)
            for unit in 0..<string.count { append(UInt8(truncatingIfNeeded: string.unit(unit))) }
        } else {
            appendHeader(0x60, count: string.count)
            append(contentsOf: UnsafeRawBufferPointer(start: string.start, count: 2 * string.count))
        }
    }
}
