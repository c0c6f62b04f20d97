/// Copying objects of a stored blob into the output, in the writer's form, without making a
/// Swift value of any string or data: bytes go from one region to the other.
///
/// A blob this writer wrote is copied byte for byte but for the references (renumbered);
/// one another program wrote (shared objects, wider integers, ASCII text as UTF-16, unsorted
/// keys) comes out as this writer would have written its values. The blob was validated
/// when it was loaded (``BinaryPropertyListReader``): the checks made again here only keep
/// each read inside the blob.
extension BinaryPropertyListWriter {
    /// Copies object `object` of `view` (with all it contains) as object `index`.
    mutating func copy(_ object: Int, of view: BlobView, index: Int) throws(BinaryPropertyListError) {
        markObject(index)
        let offset = try view.objectOffset(object)
        let marker = view.byte(at: offset)
        switch marker & 0xF0 {
        case 0xA0:
            let (count, start) = try view.countAndStart(marker: marker, offset: offset, unitSize: view.objectRefSize)
            let first = startContainer(0xA0, count: count, index: index)
            for element in 0..<count {
                try copy(view.reference(at: start + element * view.objectRefSize), of: view, index: first + element)
            }
        case 0xD0:
            let (count, start) = try view.countAndStart(marker: marker, offset: offset, unitSize: 2 * view.objectRefSize)
            let firstKey = startContainer(0xD0, count: count, index: index)
            let order = try view.keys(count: count, references: start).order
            let values = start + count * view.objectRefSize
            for entry in 0..<count {
                let key = order?[entry] ?? entry
                try copyString(view.string(view.reference(at: start + key * view.objectRefSize)), index: firstKey + entry)
            }
            for entry in 0..<count {
                let key = order?[entry] ?? entry
                try copy(view.reference(at: values + key * view.objectRefSize), of: view, index: firstKey + count + entry)
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
